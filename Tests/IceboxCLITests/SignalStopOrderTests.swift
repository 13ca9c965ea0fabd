import Foundation
import Glibc
import IceboxCore
import Testing

/// A SIGSTOP freeze signals every member before it reads any (SignalFreezer.beginFreeze): the
/// stat files a freeze keeps are opened after the SIGSTOPs, and someone else's stop is told at
/// the look that finds a process stopped, by the SIGSTOP still queued on its leader. Reading
/// first put 1000 opens and reads before the first stop.
@Suite(
    .enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"),
    .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"),
    .enabled(if: Strace.path != nil, "needs strace to see the daemon's system calls (scripts/test installs it)"),
    .timeLimit(.minutes(5)))
struct SignalStopOrderTests {
    @Test("the daemon sends a SIGSTOP freeze's signals before it opens any member's stat file")
    func signalsBeforeReads() throws {
        let box = Sandbox()
        defer { box.close() }
        let l = try box.icebox([
            "launch", "--backend", "signal", "--grace", "0", "three", "--", "sh", "-c", "sleep 1000 & sleep 1000 & wait",
        ])
        try #require(l.status == 0, "\(l.output)")
        let cgroup = try #require(box.cgroupRoot) + "/three"
        try #require(Scenario.eventually { Sandbox.pids(in: cgroup).count == 3 }, "the sleeps did not start")
        let members = Sandbox.pids(in: cgroup)
        let daemon = try #require(box.daemonPID)
        let lines = try Strace.trace(["tgkill", "kill", "openat"], of: daemon) {
            let r = try box.icebox(["suspend", "three"])
            #expect(r.status == 0, "\(r.output)")
        }
        let stop = { (line: String) in (line.hasPrefix("tgkill(") || line.hasPrefix("kill(")) && line.contains("SIGSTOP") }
        // The freeze's own (ProcessStatFiles); the request's look at the main process before it
        // opens with O_NOFOLLOW.
        let statOpen = { (line: String) in
            members.contains { line.hasPrefix("openat(") && line.contains("\"/proc/\($0)/stat\", O_RDONLY|O_CLOEXEC)") }
        }
        let firstStop = try #require(lines.firstIndex(where: stop), "no SIGSTOP was sent: \(lines)")
        let firstOpen = try #require(lines.firstIndex(where: statOpen), "no member's stat file was opened: \(lines)")
        #expect(firstStop < firstOpen, "\(lines)")
        #expect(lines.filter(stop).count == 3, "one SIGSTOP a member: \(lines.filter(stop))")
        let r = try box.icebox(["resume", "three"])
        #expect(r.status == 0, "\(r.output)")
        #expect(members.allSatisfy { Kernel.processState($0) != "T" })
    }
}

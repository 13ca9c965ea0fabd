import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// A SIGSTOP freeze ends when the app's last task stops, and the kernel tells the app's parent
/// just then (SIGCHLD, CLD_STOPPED). The daemon is that parent for the apps it starts: the
/// signal is the freeze's event, as cgroup.events is a cgroup freeze's, and the daemon reads
/// the app at once instead of at its next re-read (Daemon.stepFreezesEndedByStop); meanwhile it
/// re-reads only as a safety net and stays on its CPU (FreezeOperation.waitsOnAnnouncement).
@Suite(
    .enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"),
    .enabled(
        if: Sandbox.writableMounts.freezerV1 != nil,
        "holds the app's stop back in a v1 freezer cgroup of its own, and this host has no writable v1 freezer hierarchy"),
    .enabled(if: Strace.path != nil, "needs strace to see the daemon's reads (scripts/test installs it)"),
    .timeLimit(.minutes(5)))
struct SignalFreezeStopEventTests {
    /// Whether the SIGSTOP sent to `pid` waits, not yet taken.
    static func stopPending(_ pid: pid_t) -> Bool { ProcFS.stopPending(pid: pid, tid: pid) }

    @Test("a SIGSTOP freeze is read again at the app's stop (its SIGCHLD), before the daemon waits again, and waits without stepping aside")
    func readAtTheStop() throws {
        let box = Sandbox()
        defer { box.close() }
        // The app's stop is held back by a v1 freezer cgroup (a hierarchy the signal backend
        // does not use): frozen, the app cannot take the SIGSTOP until the test lets it.
        let hold = try #require(Sandbox.writableMounts.freezerV1) + "/" + URL(fileURLWithPath: box.dir).lastPathComponent + "-hold"
        try #require(mkdir(hold, 0o755) == 0, "mkdir \(hold): \(String(cString: strerror(errno)))")
        defer { Sandbox.removeCgroupTrees([hold]) }
        let l = try box.icebox(["launch", "--backend", "signal", "--grace", "0", "held", "--", "sleep", "1000"])
        try #require(l.status == 0, "\(l.output)")
        let pid = try #require(try box.apps()["held"]?.pid)
        let daemon = try #require(box.daemonPID)
        try "\(pid)".write(toFile: hold + "/cgroup.procs", atomically: false, encoding: .utf8)

        // A round shows the event when the SIGCHLD is read before the look that finds the app
        // stopped; a re-read due just then can be first, so three rounds, of which one must.
        var readAtTheEvent = 0
        for round in 1...3 {
            try "FROZEN".write(toFile: hold + "/freezer.state", atomically: false, encoding: .utf8)
            try #require(Scenario.eventually { Kernel.freezerState(hold) == "FROZEN" }, "the hold did not freeze the app")
            let syscalls = ["read", "pread64", "epoll_wait", "epoll_pwait2", "sched_setaffinity"]
            let lines = try Strace.trace(syscalls, options: ["-y", "-s", "64"], of: daemon) {
                let suspend = Sandbox.Background(box, ["suspend", "held"])
                try #require(Scenario.eventually { Self.stopPending(pid) }, "round \(round): the daemon sent no SIGSTOP")
                usleep(200_000)
                #expect(suspend.result(within: 0) == nil, "round \(round): the suspend ended while the app could not stop")
                try "THAWED".write(toFile: hold + "/freezer.state", atomically: false, encoding: .utf8)
                let r = suspend.result(within: 20)
                #expect(r?.status == 0, "round \(round): \(r?.output ?? "the suspend did not end")")
            }
            // Waiting for its child's SIGCHLD, the daemon stays on its CPU (CPUStepAside is for
            // tasks it must let run).
            let aside = lines.firstIndex { $0.hasPrefix("sched_setaffinity(") }
            #expect(
                aside == nil, "round \(round): the daemon stepped aside while it waited: \(aside.map { lines[max(0, $0 - 8)...$0] } ?? [])")
            // The look that found the app stopped, and the SIGCHLD read since the look before it
            // (a SIGCHLD read earlier was another's), if any: with no wait between them.
            let look = { (line: String) in line.hasPrefix("pread64(") && line.contains("</proc/\(pid)/stat>") }
            let found = try #require(
                lines.firstIndex { look($0) && $0.contains(") T ") }, "round \(round): the daemon never read the app stopped: \(lines)")
            let since = lines[..<found].lastIndex(where: look) ?? 0
            if let wake = lines[since..<found].lastIndex(where: { $0.contains("signalfd") && $0.hasSuffix("= 128") }) {
                readAtTheEvent += 1
                #expect(
                    !lines[wake..<found].contains { $0.hasPrefix("epoll_") },
                    "round \(round): after the SIGCHLD the daemon waited before reading the app: \(lines[wake...found])")
            }
            let r = try box.icebox(["resume", "held"])
            try #require(r.status == 0, "\(r.output)")
        }
        #expect(readAtTheEvent > 0, "in no round was the SIGCHLD read before the look that found the app stopped")
    }
}

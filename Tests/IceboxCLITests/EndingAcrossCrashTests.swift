import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// Deadlines that must survive a daemon crash (issue 33: "a terminate in flight is forgotten
/// by a crash: the SIGKILL deadline lives only in memory, so an app that ignores SIGTERM
/// stays active and is never killed"). The daemon is SIGKILLed while the deadline runs; the
/// next one, started by any command, must keep it. Judged from the kernel (the process's
/// pidfd, the cgroup's cgroup.procs) and the registry.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct EndingAcrossCrashTests {
    /// Seconds until `pid` has ended (polled on its pidfd), nil if it still runs after `limit`.
    static func secondsUntilGone(_ pid: pid_t, limit: Double) -> Double? {
        let start = Date()
        guard let handle = try? ProcessHandle(adopting: pid) else { return 0 }
        var pfd = pollfd(fd: handle.pidfd, events: Int16(POLLIN), revents: 0)
        return poll(&pfd, 1, Int32(limit * 1000)) == 1 ? Date().timeIntervalSince(start) : nil
    }

    @Test(
        "a terminate in flight when the daemon is killed: the next daemon SIGKILLs the app at the recorded deadline",
        .enabled(if: Sandbox.cgroupMissing == nil, "\(Sandbox.cgroupMissing ?? "")"))
    func terminateAcrossACrash() throws {
        let box = Sandbox()
        defer { box.close() }
        // It ignores SIGTERM, and says it is ready only once it does (a shell's trap, with
        // --ready exec, could come after the SIGTERM).
        let code =
            "import os, signal, socket, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b'READY=1', os.environ['NOTIFY_SOCKET'])\nwhile True: time.sleep(1)"
        let launch = try box.icebox(["launch", "--ready", "notify", "stubborn", "--", "python3", "-c", code])
        #expect(launch.status == 0, "\(launch.output)")
        let record = try #require(try box.apps()["stubborn"])
        let cgroup = try #require(Kernel.appCgroup(record))
        let sandbox = box
        let asked = Date()
        Thread { _ = try? sandbox.icebox(["terminate", "--timeout", "4s", "stubborn"], timeout: 20) }.start()
        #expect(
            Scenario.eventually { box.events("stubborn").contains { $0.kind == .terminate && $0.detail.contains("SIGTERM sent") } },
            "the terminate never began")
        try box.killDaemon()
        #expect(Date().timeIntervalSince(asked) < 3, "the daemon died too late for the test to mean anything")
        #expect(Kernel.alive(record.pid), "SIGTERM is ignored: the app runs on")

        // Any command starts the next daemon, which re-adopts the app with its terminate.
        let after = try #require(try box.apps()["stubborn"])
        #expect(after.pid == record.pid)
        #expect(
            box.events("stubborn").contains { $0.kind == .adopt && $0.detail.contains("a terminate under way") },
            "\(box.events("stubborn").map(\.detail))")
        #expect(Self.secondsUntilGone(record.pid, limit: 10) != nil, "the app was never killed")
        let killedAt = Date().timeIntervalSince(asked)
        // At the deadline the first daemon set (4 s after the request), not at once and not
        // after a fresh time-out.
        #expect(killedAt >= 3.5 && killedAt < 6.5, "killed \(killedAt) s after the terminate")
        #expect(Scenario.eventually { Sandbox.pids(in: cgroup).isEmpty }, "cgroup.procs still lists \(Sandbox.pids(in: cgroup))")
        #expect(try Scenario.eventually { try box.apps()["stubborn"]?.state == .terminated })
    }

    @Test("a launch under way when the daemon is killed keeps its ready deadline under the next daemon")
    func readyDeadlineAcrossACrash() throws {
        let box = Sandbox()
        defer { box.close() }
        let sandbox = box
        let launched = Date()
        Thread {
            _ = try? sandbox.icebox(
                ["launch", "--ready", "notify", "--ready-timeout", "6s", "slowstart", "--", "sleep", "1000"], timeout: 20)
        }.start()
        #expect(try Scenario.eventually { try box.apps()["slowstart"]?.state == .launching })
        let record = try #require(try box.apps()["slowstart"])
        try box.killDaemon()
        // The next daemon adopts it still launching, its deadline 6 s after the launch: not
        // over at once (a deadline counted from 0), not 6 s from the adoption.
        #expect(try box.apps()["slowstart"]?.state == .launching)
        #expect(Kernel.alive(record.pid))
        #expect(Self.secondsUntilGone(record.pid, limit: 15) != nil, "the app was never terminated")
        let endedAt = Date().timeIntervalSince(launched)
        #expect(endedAt >= 5.5 && endedAt < 9.5, "terminated \(endedAt) s after the launch")
        #expect(try Scenario.eventually { try box.apps()["slowstart"]?.state == .terminated })
        #expect(box.events("slowstart").contains { $0.kind == .error && $0.detail.contains("was not ready (notify)") })
    }
}

extension EndingAcrossCrashTests {
    @Test(
        "a daemon killed in the second after a freeze: the next one still checks the frozen app's locks",
        .enabled(if: Sandbox.cgroupMissing == nil, "\(Sandbox.cgroupMissing ?? "")"))
    func lockCheckAcrossACrash() throws {
        let box = Sandbox()
        defer { box.close() }
        let lockFile = box.dir + "/lock"
        _ = FileManager.default.createFile(atPath: lockFile, contents: nil)
        let code = PolicyTests.lockHolder(lockFile)
        #expect(try box.icebox(["launch", "--ready", "notify", "holder", "--", "python3", "-c", code]).status == 0)
        let suspended = Date()
        #expect(try box.icebox(["suspend", "--grace", "0", "holder"]).status == 0)
        // Killed before its lock check (one second after the freeze) came due.
        try box.killDaemon()
        #expect(Date().timeIntervalSince(suspended) < 1, "the daemon died too late for the test to mean anything")
        #expect(!box.events("holder").contains { $0.kind == .lock })
        let waiter = Process()
        waiter.executableURL = URL(fileURLWithPath: "/usr/bin/flock")
        waiter.arguments = [lockFile, "true"]
        try waiter.run()
        defer {
            if waiter.isRunning { kill(waiter.processIdentifier, SIGKILL) }
            waiter.waitUntilExit()
        }
        let cgroup = try #require(try box.apps()["holder"].flatMap(Kernel.appCgroup))  // the next daemon, which re-adopts it frozen
        #expect(
            try Scenario.eventually(seconds: 10) { try box.apps()["holder"]?.state == .active },
            "the frozen holder was never thawed for the process waiting on its lock")
        #expect(!Kernel.frozen(cgroup))
        #expect(box.events("holder").contains { $0.kind == .lock && $0.detail.contains("thawing") })
    }
}

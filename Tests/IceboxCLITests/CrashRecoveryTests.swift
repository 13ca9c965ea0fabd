import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// The daemon dies (SIGKILL) at awkward moments; the next one, started on demand, re-adopts
/// every app and shows the truth. Nothing is left half-frozen.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct CrashRecoveryTests {
    func daemonPID(_ box: Sandbox) throws -> pid_t { try #require(box.daemonPID) }

    /// SIGKILLs the daemon and waits (through a pidfd) until it is gone.
    func killDaemon(_ box: Sandbox) throws { try box.killDaemon() }

    /// A daemon started from inside an app's cgroup with the app's marks (an app that ran
    /// icebox, after its own daemon died): adopting that cgroup would make the daemon an app
    /// of its own, which a suspend would freeze (and nothing would thaw) and a cleanup would
    /// kill. It leaves that cgroup alone.
    @Test(
        "a daemon inside a marked app cgroup does not adopt (or kill) itself",
        .enabled(if: Sandbox.cgroupMissing == nil, "\(Sandbox.cgroupMissing ?? "")"))
    func daemonInsideAnAppCgroup() throws {
        let box = Sandbox()
        defer { box.close() }
        let cgroup = try #require(box.cgroupRoot) + "/web"
        try FileIO.makeDirectories(cgroup)
        // A daemon with no app and no client leaves after a second: a connection held open
        // keeps it, so that an end below could only be its own doing. Started again if it left
        // (idle) before the connection was made.
        var hold: Int32 = -1
        for _ in 0..<3 where hold < 0 {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/bin/sh")
            p.arguments = ["-c", #"echo $$ > "$0/cgroup.procs" && exec "$1" daemon"#, cgroup, Sandbox.binary]
            p.environment = box.environment.merging(["ICEBOX_APP_NAME": "web", "NOTIFY_SOCKET": box.runtimeDir + "/notify.sock"]) {
                $1
            }
            let started = try Sandbox.runToEnd(p, timeout: 30, what: "icebox daemon from inside \(cgroup)")
            #expect(started.status == 0, "\(started.output)")
            hold = (try? UnixSocket.connect(path: box.runtimeDir + "/icebox.sock")) ?? -1
        }
        try #require(hold >= 0, "the daemon left three times before a connection could hold it")
        defer { if hold >= 0 { close(hold) } }
        let daemon = try daemonPID(box)
        #expect(Sandbox.pids(in: cgroup).contains(daemon), "the daemon is not in \(cgroup)")
        // doctor finds the daemon by its lock file (which it holds open) and reads its capabilities.
        let doctor = try box.icebox(["doctor", "--color", "never"])
        #expect(doctor.stdout.contains("pid \(daemon) has"), "\(doctor.stdout)")
        let apps = try box.apps()
        #expect(apps["web"] == nil, "the daemon adopted its own cgroup as web: \(apps["web"].map { "pid \($0.pid)" } ?? "")")
        if apps["web"] == nil {  // else a suspend would freeze the daemon itself
            let suspend = try box.icebox(["suspend", "web"])
            #expect(suspend.status == 1 && suspend.stderr.contains("no app named 'web'"), "\(suspend.output)")
        }
        #expect(Kernel.alive(daemon) && Kernel.processState(daemon) != "T")
        // A daemon waits for its clients before it exits: the held connection goes first.
        close(hold)
        hold = -1
        #expect(try box.icebox(["daemon", "--stop"]).status == 0)
    }

    @Test(
        "running and frozen apps are re-adopted with their true state, cgroup v1 freezer",
        .enabled(if: Sandbox.writableMounts.freezerV1 != nil, "\(LifecycleTests.freezerV1Reason)"))
    func readoptV1() throws { try readopt(backend: "cgroup1") }

    @Test(
        "running and frozen apps are re-adopted with their true state, cgroup v2",
        .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"))
    func readoptV2() throws { try readopt(backend: "cgroup2") }

    @Test("running and frozen apps are re-adopted with their true state, SIGSTOP")
    func readoptSignal() throws { try readopt(backend: "signal") }

    func readopt(backend: String) throws {
        let box = Sandbox("readopt\(backend)")
        defer { box.close() }
        let app = box.pythonApp()
        _ = try box.icebox(["launch", "--backend", backend, "--ready", "notify", "awake", "--", "python3", app])
        _ = try box.icebox(["launch", "--backend", backend, "--ready", "notify", "asleep", "--", "python3", app])
        _ = try box.icebox(["suspend", "asleep"])
        let before = try box.apps()
        try killDaemon(box)
        // ps starts a new daemon, which re-adopts both.
        let after = try box.apps()
        #expect(after["awake"]?.state == .active)
        #expect(after["asleep"]?.state == .suspended)
        #expect(after["awake"]?.pid == before["awake"]?.pid)
        #expect(box.events("asleep").contains { $0.kind == .adopt })
        // And they are controllable again, including their notify sockets.
        let r = try box.icebox(["resume", "asleep"])
        #expect(r.status == 0, "\(r.output)")
        let s = try box.icebox(["suspend", "awake"])
        #expect(s.status == 0, "\(s.output)")
        #expect(s.stdout.contains("READY=1"), "the re-bound notify socket must carry READY=1: \(s.stdout)")
        // An adopted app is not our child: its end is still seen, without a status.
        let e = try box.icebox(["evict", "asleep"])
        #expect(e.status == 0, "\(e.output)")
        #expect(try box.apps()["asleep"]?.state == .evicted)
    }

    @Test("a grace period under way runs to its recorded deadline under the next daemon")
    func crashDuringGrace() throws {
        let box = Sandbox()
        defer { box.close() }
        let app = box.pythonApp(onNotice: "pass")
        // The grace leaves room for this test's own polling on a loaded machine (3 s did not:
        // the kill came after the freeze).
        _ = try box.icebox(["launch", "--ready", "notify", "--grace", "8s", "slow", "--", "python3", app])
        let sandbox = box
        Thread { _ = try? sandbox.icebox(["suspend", "slow"]) }.start()
        let deadline = Date().addingTimeInterval(10)
        while (try? box.apps()["slow"]?.state) != .background && Date() < deadline { usleep(10_000) }
        try killDaemon(box)
        _ = try box.apps()  // starts a new daemon, which re-adopts the app in its grace period
        #expect(
            box.events("slow").contains { $0.kind == .adopt && $0.detail.contains("grace period") },
            "\(box.events("slow").map(\.detail))")
        let until = Date().addingTimeInterval(20)
        while (try? box.apps()["slow"]?.state) != .suspended && Date() < until { usleep(50_000) }
        let record = try #require(try box.apps()["slow"])
        #expect(record.state == .suspended)
        #expect(Kernel.appFrozen(record))
        // Frozen at the deadline the first daemon set (8 s after the notice), not at once and
        // not after a fresh grace period.
        let notice = try #require(box.events("slow").first { $0.kind == .notice })
        let freeze = try #require(box.events("slow").first { $0.kind == .freeze })
        let waited = Double(freeze.monotonicNanos - notice.monotonicNanos) / 1e9
        #expect(waited >= 7.9 && waited < 10.9, "frozen \(waited) s after the notice")
    }

    @Test(
        "a freeze half done when the daemon died is completed",
        .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"))
    func crashMidFreeze() throws {
        let box = Sandbox()
        defer { box.close() }
        let app = box.pythonApp(onNotice: "pass")
        _ = try box.icebox(["launch", "--ready", "notify", "--grace", "30s", "half", "--", "python3", app])
        let sandbox = box
        Thread { _ = try? sandbox.icebox(["suspend", "half"]) }.start()
        let deadline = Date().addingTimeInterval(10)
        while (try? box.apps()["half"]?.state) != .background && Date() < deadline { usleep(10_000) }
        let cgroup = try #require(try box.apps()["half"]?.cgroup)
        try killDaemon(box)
        // The dead daemon had written cgroup.freeze but not yet seen it confirmed.
        try "1".write(toFile: cgroup + "/cgroup.freeze", atomically: false, encoding: .utf8)
        let record = try #require(try box.apps()["half"])
        #expect(record.state == .suspended)
        #expect(Kernel.cgroupFrozen(cgroup))
        // The kernel may have finished the freeze before the new daemon looked; either way
        // the new daemon confirmed it and did not roll it back.
        #expect(
            box.events("half").contains {
                $0.kind == .adopt && ($0.detail.contains("freeze under way was completed") || $0.detail.contains("frozen (confirmed)"))
            })
    }

    /// Appends the event line a daemon writes when `app` goes from `from` to active, now: what
    /// a daemon SIGKILLed right after that write leaves in the log.
    func logAsTheDeadDaemon(_ box: Sandbox, _ app: String, _ kind: EventKind, from: AppState?, _ detail: String) throws {
        var event = Event(
            time: Clock.rfc3339(wallNanos: Clock.wallNanos()), monotonicNanos: Clock.monotonicNanos(), app: app, kind: kind, detail: detail)
        event.from = from
        event.to = .active
        let log = try #require(FileHandle(forWritingAtPath: box.stateDir + "/events.jsonl"))
        defer { try? log.close() }
        try log.seekToEnd()
        try log.write(contentsOf: Data((JSONLines.encode(event) + "\n").utf8))
    }

    /// What the daemons SIGKILLed before their registry writes left in the log.
    enum DeadDaemonsLog: String, CaseIterable, CustomTestStringConvertible {
        case nothing  // killed after the thaw, before its line
        case thaw  // killed after the thaw's line
        case thawThenReadoption  // and the next one killed after its re-adoption's line
        case readoptionThenThaw  // nothing, then the next one killed after it completed the thaw

        var testDescription: String { rawValue }
    }

    /// A resume is logged, then answered and written to the registry: a daemon SIGKILLed in
    /// between leaves the record "suspended" over a thawed cgroup. The next daemon finishes
    /// the thaw it finds half done, and logs it, unless the log already has it: one thaw, one
    /// line (the restart race test saw two). A daemon after it, killed as it starts, logs its
    /// re-adoption before its own registry write: the one after that must look past that line
    /// (the race test saw two thaws again), and at the thaw a daemon completes, which says
    /// the step it is (as the real line does: checked in the first case).
    @Test(
        "a thaw the dead daemons logged but did not record is not done and logged again",
        .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"), arguments: DeadDaemonsLog.allCases)
    func crashAfterThawLogged(left: DeadDaemonsLog) throws {
        let box = Sandbox("thawLogged-\(left.rawValue)")
        defer { box.close() }
        let launched = try box.icebox(["launch", "--backend", "cgroup2", "half", "--", "sleep", "1000"])
        try #require(launched.status == 0, "\(launched.output)")
        #expect(try box.icebox(["suspend", "--grace", "0", "half"]).status == 0)
        let cgroup = try #require(try box.apps()["half"]?.cgroup)
        try killDaemon(box)
        // What the dead daemons did before their registry writes: the thaw, and maybe lines.
        try "0".write(toFile: cgroup + "/cgroup.freeze", atomically: false, encoding: .utf8)
        let readoption = "re-adopted after a daemon restart (a dead daemon's line)"
        switch left {
        case .nothing: break
        case .thaw: try logAsTheDeadDaemon(box, "half", .thaw, from: .suspended, "thawed in 90 µs (cgroup2)")
        case .thawThenReadoption:
            try logAsTheDeadDaemon(box, "half", .thaw, from: .suspended, "thawed in 90 µs (cgroup2)")
            try logAsTheDeadDaemon(box, "half", .adopt, from: nil, readoption)
        case .readoptionThenThaw:
            try logAsTheDeadDaemon(box, "half", .adopt, from: nil, readoption)
            try logAsTheDeadDaemon(box, "half", .thaw, from: .suspended, "thawed in 90 µs after a daemon restart")
        }
        let thawsBefore = box.events("half").filter { $0.kind == .thaw }.count
        #expect(try box.apps()["half"]?.state == .active)
        let adopted = box.events("half").last { $0.kind == .adopt }?.detail ?? ""
        if left != .nothing {
            #expect(adopted.contains("thawed and logged by an earlier daemon"), "\(adopted)")
        } else {
            #expect(adopted.contains("a thaw under way"), "\(adopted)")
            #expect(Scenario.eventually(seconds: 10) { box.events("half").filter { $0.kind == .thaw }.count == thawsBefore + 1 })
            // The completed thaw's line is the step from suspended to active, for whoever
            // takes over after this daemon.
            let completed = box.events("half").last { $0.kind == .thaw }
            #expect(completed?.from == .suspended && completed?.to == .active, "\(completed?.humanLine ?? "no thaw")")
        }
        // Nothing more comes: the next request's answer is logged after any thaw would be.
        _ = try box.icebox(["suspend", "--grace", "0", "half"])
        let thaws = box.events("half").filter { $0.kind == .thaw }.count
        #expect(
            thaws == (left != .nothing ? thawsBefore : thawsBefore + 1), "\(box.events("half").map(\.humanLine).joined(separator: "\n"))")
        let state = try box.apps()["half"]?.state
        #expect(state == .suspended && Kernel.cgroupFrozen(cgroup), "\(state.map(\.rawValue) ?? "gone")")
    }

    /// The same window for a resume during the grace: the next daemon must not put the app
    /// back in its grace (and freeze it at the deadline) after its user resumed it.
    @Test(
        "a resume during the grace the dead daemon logged but did not record is kept",
        .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"))
    func crashAfterResumeLogged() throws {
        let box = Sandbox()
        defer { box.close() }
        let app = box.pythonApp(onNotice: "pass")
        // A grace with room for this test's polling on a loaded machine (see crashDuringGrace).
        _ = try box.icebox(["launch", "--ready", "notify", "--grace", "8s", "half", "--", "python3", app])
        let sandbox = box
        Thread { _ = try? sandbox.icebox(["suspend", "half"]) }.start()
        try #require(Scenario.eventually { (try? box.apps()["half"]?.state) == .background })
        let cgroup = try #require(try box.apps()["half"]?.cgroup)
        try killDaemon(box)
        try logAsTheDeadDaemon(box, "half", .resume, from: .background, "resumed during its grace period; not frozen")
        #expect(try box.apps()["half"]?.state == .active)
        let adopted = box.events("half").last { $0.kind == .adopt }?.detail ?? ""
        #expect(
            adopted.contains("resumed and logged by an earlier daemon"), "\(box.events("half").map(\.humanLine).joined(separator: "\n"))")
        // Past the recorded grace (8 s after the notice), it still runs.
        let notice = try #require(box.events("half").first { $0.kind == .notice })
        let past = notice.monotonicNanos.saturatingAdd(8_500_000_000).saturatingSub(Clock.monotonicNanos())
        usleep(UInt32(min(past / 1000, 9_000_000)))
        #expect(!Kernel.cgroupFrozen(cgroup))
        #expect(try box.apps()["half"]?.state == .active)
    }

    @Test("an app that ended while no daemon ran is recorded, its cgroup removed; a suspended one restores")
    func endedWhileAway() throws {
        let box = Sandbox()
        defer { box.close() }
        let app = box.pythonApp()
        _ = try box.icebox(["launch", "--ready", "notify", "gone", "--", "python3", app])
        _ = try box.icebox(["suspend", "gone"])
        let record = try #require(try box.apps()["gone"])
        try killDaemon(box)
        kill(record.pid, SIGKILL)  // frozen in cgroup v2 or stopped: SIGKILL still works
        // A task frozen by the v1 freezer dies of it only once thawed (thawed from outside here).
        if record.backend == .cgroup1, let freezer = record.freezerV1 {
            try "THAWED".write(toFile: freezer + "/freezer.state", atomically: false, encoding: .utf8)
        }
        let deadline = Date().addingTimeInterval(5)
        while Kernel.alive(record.pid) && Date() < deadline { usleep(5_000) }
        let after = try #require(try box.apps()["gone"])
        #expect(after.state == .exited)
        #expect(after.ending?.contains("ended while no daemon ran") == true)
        if let cgroup = Kernel.appCgroup(record) { #expect(!FileManager.default.fileExists(atPath: cgroup)) }
        // Killed while suspended: the next launch is a restore.
        let relaunch = try box.icebox(["relaunch", "gone"])
        #expect(relaunch.status == 0, "\(relaunch.output)")
        let pid = try #require(try box.apps()["gone"]?.pid)
        let env = try String(contentsOfFile: "/proc/\(pid)/environ", encoding: .utf8)
        #expect(env.contains("ICEBOX_LAUNCH_REASON=restore"))
    }

    @Test("daemon --stop leaves apps as they are for the next daemon; --terminate-apps ends them")
    func stopModes() throws {
        let box = Sandbox()
        defer { box.close() }
        _ = try box.icebox(["launch", "keep", "--", "sleep", "1000"])
        _ = try box.icebox(["suspend", "--grace", "0", "keep"])
        let pid = try #require(try box.apps()["keep"]?.pid)
        let stop = try box.icebox(["daemon", "--stop"])
        #expect(stop.status == 0)
        #expect(stop.stdout.contains("left as they are"))
        #expect(Kernel.alive(pid))
        #expect(try box.apps()["keep"]?.state == .suspended)  // a new daemon re-adopted it
        let end = try box.icebox(["daemon", "--stop", "--terminate-apps"])
        #expect(end.status == 0)
        #expect(!Kernel.alive(pid))
        #expect(try box.apps()["keep"]?.state == .terminated)
    }

    /// When `daemon --stop` returns, the runtime directory's lock is free: the next command
    /// starts the next daemon at once. (Held until the old process exited, a `ps` right after
    /// the stop found it held with the socket gone, and failed: "busy", under load in CI.)
    @Test("the lock is free when daemon --stop returns")
    func lockFreeAfterStop() throws {
        let box = Sandbox()
        defer { box.close() }
        _ = try box.icebox(["launch", "kept", "--", "sleep", "1000"])
        for round in 0..<5 {
            let stop = try box.icebox(["daemon", "--stop"])
            #expect(stop.status == 0, "\(stop.output)")
            let fd = open(box.runtimeDir + "/daemon.lock", O_RDONLY | O_CLOEXEC)
            #expect(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0, "round \(round): still locked after the stop returned")
            close(fd)
            let ps = try box.icebox(["ps"])  // starts the next daemon, which re-adopts the app
            #expect(ps.status == 0 && ps.stdout.contains("kept"), "round \(round): \(ps.output)")
        }
    }
}

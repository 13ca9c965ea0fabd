import Foundation
import Glibc
import IceboxCore
import Testing

/// The whole lifecycle on real processes and real cgroups, once per backend.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct LifecycleTests {
    /// Each backend runs as a test of its own with its own condition (a parameterized test
    /// cannot skip one argument with a reason): cgroup2 needs a cgroup2 root, cgroup1 a v1
    /// freezer hierarchy (which a pure v2 host lacks); signal runs on every host.
    static let freezerV1Reason = "the cgroup1 backend needs a cgroup v1 freezer hierarchy mounted"

    @Test(
        "launch → suspend (notice, READY=1) → resume → evict, cgroup v1 freezer",
        .enabled(if: Sandbox.writableMounts.freezerV1 != nil, "\(LifecycleTests.freezerV1Reason)"))
    func fullCycleV1() throws { try fullCycle(backend: "cgroup1") }

    @Test(
        "launch → suspend (notice, READY=1) → resume → evict, cgroup v2",
        .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"))
    func fullCycleV2() throws { try fullCycle(backend: "cgroup2") }

    @Test("launch → suspend (notice, READY=1) → resume → evict, SIGSTOP")
    func fullCycleSignal() throws { try fullCycle(backend: "signal") }

    func fullCycle(backend: String) throws {
        let box = Sandbox("cycle\(backend)")
        defer { box.close() }
        let app = box.pythonApp()
        let launched = try box.icebox(["launch", "--backend", backend, "--ready", "notify", "web", "--", "python3", app])
        #expect(launched.status == 0, "\(launched.output)")
        #expect(launched.stdout.contains("ready in"))

        let suspended = try box.icebox(["suspend", "web"])
        #expect(suspended.status == 0, "\(suspended.output)")
        #expect(suspended.stdout.contains("SIGUSR1 sent"))
        #expect(suspended.stdout.contains("(READY=1)"))
        #expect(suspended.stdout.contains("frozen in"))

        var record = try #require(try box.apps()["web"])
        #expect(record.state == .suspended)
        #expect(record.backend.rawValue == backend)
        #expect(record.statusText == "serving")
        let pid = record.pid
        // The kernel agrees.
        switch backend {
        case "cgroup2": #expect(Kernel.cgroupFrozen(try #require(record.cgroup)))
        case "cgroup1": #expect(Kernel.freezerState(try #require(record.freezerV1)) == "FROZEN")
        default: #expect(Kernel.processState(pid) == "T")
        }
        // A second suspend is a no-op that says so.
        let again = try box.icebox(["suspend", "web"])
        #expect(again.status == 0)
        #expect(again.stdout.contains("already suspended"))

        let resumed = try box.icebox(["resume", "web"])
        #expect(resumed.status == 0, "\(resumed.output)")
        #expect(resumed.stdout.contains("thawed in"))
        record = try #require(try box.apps()["web"])
        #expect(record.state == .active)
        switch backend {
        case "cgroup2": #expect(!Kernel.cgroupFrozen(try #require(record.cgroup)))
        case "cgroup1": #expect(Kernel.freezerState(try #require(record.freezerV1)) == "THAWED")
        default: #expect(Kernel.processState(pid) != "T")
        }
        #expect(try box.icebox(["resume", "web"]).stdout.contains("already active"))

        _ = try box.icebox(["suspend", "web"])
        let evicted = try box.icebox(["evict", "web"])
        #expect(evicted.status == 0, "\(evicted.output)")
        #expect(evicted.stdout.contains("evicted"))
        record = try #require(try box.apps()["web"])
        #expect(record.state == .evicted)
        #expect(record.exitStatus == 128 + SIGKILL)
        #expect(!Kernel.alive(pid))
        // Whatever cgroups the app had are gone (the signal backend on a host without
        // cgroups gives it none).
        if backend == "cgroup2" { #expect(record.cgroup != nil) }
        if let v2 = record.cgroup { #expect(!FileManager.default.fileExists(atPath: v2)) }
        if let v1 = record.freezerV1 { #expect(!FileManager.default.fileExists(atPath: v1)) }
        // Every step is in the log with its timing.
        let kinds = box.events("web").map(\.kind)
        for kind: EventKind in [.spawn, .ready, .notice, .freeze, .thaw, .evict] { #expect(kinds.contains(kind), "no \(kind) event") }
        #expect(box.events("web").first { $0.kind == .freeze }?.durationNanos != nil)
    }

    @Test(
        "a process tree with a double-forked grandchild is frozen and killed whole, cgroup v1 freezer",
        .enabled(if: Sandbox.writableMounts.freezerV1 != nil, "\(LifecycleTests.freezerV1Reason)"))
    func processTreeV1() throws { try processTree(backend: "cgroup1") }

    @Test(
        "a process tree with a double-forked grandchild is frozen and killed whole, cgroup v2",
        .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"))
    func processTreeV2() throws { try processTree(backend: "cgroup2") }

    /// With SIGSTOP the tree is found through the app's v2 cgroup, which the daemon gives it
    /// beside cgroup2 only (not in the v1 freezer): without one, the setsid grandchild is
    /// outside the app's session and nothing finds it.
    @Test(
        "a process tree with a double-forked grandchild is frozen and killed whole, SIGSTOP",
        .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"))
    func processTreeSignal() throws { try processTree(backend: "signal") }

    func processTree(backend: String) throws {
        let box = Sandbox("tree\(backend)")
        defer { box.close() }
        let script = "sleep 1000 & (setsid sleep 1001 &); exec sleep 1002"
        let r = try box.icebox(["launch", "--backend", backend, "--background-signal", "none", "tree", "--", "sh", "-c", script])
        #expect(r.status == 0, "\(r.output)")
        let record = try #require(try box.apps()["tree"])
        // The app's v2 cgroup, else its v1 freezer cgroup (a host without cgroup2).
        let cgroup = try #require(record.cgroup ?? record.freezerV1)
        // Wait (bounded) until the cgroup holds just the three sleeps: the subshell that forks
        // the setsid one is there for a moment too, and must be gone before we look.
        func settled(_ pids: [pid_t]) -> Bool {
            pids.count == 3
                && pids.allSatisfy {
                    (try? String(contentsOfFile: "/proc/\($0)/comm", encoding: .utf8))?.hasPrefix("sleep") == true
                }
        }
        var members: [pid_t] = []
        let deadline = Date().addingTimeInterval(5)
        while !settled(members) && Date() < deadline {
            members = Sandbox.pids(in: cgroup)
            if !settled(members) { usleep(5_000) }
        }
        #expect(members.count == 3, "members: \(members)")
        let s = try box.icebox(["suspend", "--grace", "0", "tree"])
        #expect(s.status == 0, "\(s.output)")
        #expect(s.stdout.contains("grace 0: freezing at once"))
        for pid in members {
            switch backend {
            case "cgroup2": #expect(Kernel.cgroupFrozen(cgroup))
            case "cgroup1": #expect(Kernel.freezerState(try #require(record.freezerV1)) == "FROZEN")
            default: #expect(Kernel.processState(pid) == "T", "pid \(pid) not stopped")
            }
        }
        let e = try box.icebox(["evict", "tree"])
        #expect(e.status == 0, "\(e.output)")
        for pid in members { #expect(!Kernel.alive(pid), "pid \(pid) survived eviction") }
        #expect(!FileManager.default.fileExists(atPath: cgroup))
    }

    @Test("ps lists the apps oldest launch first, an ended one (--all) in its place, the live ones with their memory")
    func psOrder() throws {
        let box = Sandbox()
        defer { box.close() }
        for name in ["first", "second", "third", "fourth"] {
            let r = try box.icebox(["launch", name, "--", "sleep", "1000"])
            try #require(r.status == 0, "\(r.output)")
        }
        _ = try box.icebox(["terminate", "second"])
        let table = try box.icebox(["ps", "--all", "--format", "{{.Name}} {{.State}} {{.MemoryBytes}}"])
        let rows = table.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(rows.map { $0[0] } == ["first", "second", "third", "fourth"], "\(table.stdout)")
        for row in rows where row[0] != "second" { #expect((UInt64(row[2]) ?? 0) > 0, "no memory for \(row[0]): \(table.stdout)") }
        #expect(rows.first { $0[0] == "second" }?[1] == "terminated")
        #expect(try box.icebox(["ps", "--quiet"]).stdout == "first\nthird\nfourth\n")
        let json = try box.icebox(["ps", "--all", "--json"])
        let records = try #require(JSONLines.decode([AppRecord].self, json.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(records.map(\.name) == ["first", "second", "third", "fourth"])
        #expect(records.filter { $0.name != "second" }.allSatisfy { ($0.memoryBytes ?? 0) > 0 && $0.memorySource != nil })
    }

    @Test("an app that ignores SIGTERM is killed after the timeout")
    func terminateIgnoringApp() throws {
        let box = Sandbox()
        defer { box.close() }
        // Ready once the trap is set: ready at exec, a fast terminate could reach the shell
        // before it ignores SIGTERM (seen against the release binary in CI).
        let trapped = box.dir + "/trapped"
        let l = try box.icebox([
            "launch", "--ready", "cmd:test -e \(trapped)", "stubborn", "--", "sh", "-c",
            "trap '' TERM; touch \(trapped); while :; do sleep 0.1; done",
        ])
        #expect(l.status == 0, "\(l.output)")
        let start = Date()
        let r = try box.icebox(["terminate", "--timeout", "300ms", "stubborn"])
        #expect(r.status == 0, "\(r.output)")
        #expect(Date().timeIntervalSince(start) >= 0.3)
        let record = try #require(try box.apps()["stubborn"])
        #expect(record.state == .terminated)
        #expect(record.exitStatus == 128 + SIGKILL)
        #expect(box.events("stubborn").contains { $0.detail.contains("SIGKILL") })
    }

    @Test("a frozen app is thawed so it can act on SIGTERM")
    func terminateFrozenApp() throws {
        let box = Sandbox()
        defer { box.close() }
        let app = box.pythonApp(extra: "signal.signal(signal.SIGTERM, lambda s, f: os._exit(0))")
        _ = try box.icebox(["launch", "--ready", "notify", "polite", "--", "python3", app])
        _ = try box.icebox(["suspend", "polite"])
        let r = try box.icebox(["terminate", "polite"])
        #expect(r.status == 0, "\(r.output)")
        let record = try #require(try box.apps()["polite"])
        #expect(record.state == .terminated)
        #expect(record.exitStatus == 0, "the app's own SIGTERM handler should have run")
    }

    @Test("an app that never answers the notice is frozen when the grace runs out")
    func graceExpires() throws {
        let box = Sandbox()
        defer { box.close() }
        let app = box.pythonApp(onNotice: "pass")
        _ = try box.icebox(["launch", "--ready", "notify", "--grace", "400ms", "mute", "--", "python3", app])
        let start = Date()
        let r = try box.icebox(["suspend", "mute"])
        #expect(r.status == 0, "\(r.output)")
        #expect(r.stdout.contains("(expired)"))
        #expect(Date().timeIntervalSince(start) >= 0.4)
        #expect(try box.apps()["mute"]?.state == .suspended)
    }

    @Test("EXTEND_TIMEOUT_USEC moves the deadline out, never past --max-grace")
    func graceExtension() throws {
        let box = Sandbox()
        defer { box.close() }
        let app = box.pythonApp(onNotice: "notify('EXTEND_TIMEOUT_USEC=10000000')")
        _ = try box.icebox(["launch", "--ready", "notify", "--grace", "200ms", "--max-grace", "700ms", "busy", "--", "python3", app])
        let start = Date()
        let r = try box.icebox(["suspend", "busy"])
        let took = Date().timeIntervalSince(start)
        #expect(r.status == 0, "\(r.output)")
        #expect(took >= 0.7, "the extension should have held the freeze off until --max-grace")
        #expect(took < 5, "the 10 s extension must be capped by --max-grace")
        #expect(r.stdout.contains("extended"))
        #expect(box.events("busy").contains { $0.detail.contains("capped by --max-grace") })
    }

    @Test("an app without a SIGUSR1 handler gets no notice but still its whole grace; --grace 0 freezes at once")
    func naiveApp() throws {
        let box = Sandbox()
        defer { box.close() }
        _ = try box.icebox(["launch", "--grace", "600ms", "naive", "--", "sleep", "1000"])
        let started = Date()
        let r = try box.icebox(["suspend", "naive"])
        let took = Date().timeIntervalSince(started)
        #expect(r.status == 0, "\(r.output)")
        #expect(r.stdout.contains("no SIGUSR1 handler"))
        #expect(r.stdout.contains("grace 600 ms"), "\(r.stdout)")
        #expect(took >= 0.6, "the grace runs its course without a notice (took \(took) s)")
        #expect(box.events("naive").contains { $0.kind == .freeze && $0.detail.contains("grace ended after") })
        _ = try box.icebox(["resume", "naive"])
        let now = try box.icebox(["suspend", "--grace", "0", "naive"])
        #expect(now.stdout.contains("grace 0: freezing at once"), "\(now.stdout)")
        #expect(now.stdout.contains("no grace"), "\(now.stdout)")
        let record = try #require(try box.apps()["naive"])
        #expect(record.state == .suspended)
        #expect(Kernel.alive(record.pid), "the naive app must not be killed by a notice")
    }

    @Test("resuming during the grace period cancels the freeze")
    func resumeDuringGrace() throws {
        let box = Sandbox()
        defer { box.close() }
        let app = box.pythonApp(onNotice: "pass")
        _ = try box.icebox(["launch", "--ready", "notify", "--grace", "20s", "slow", "--", "python3", app])
        let sandbox = box
        let suspender = Thread { _ = try? sandbox.icebox(["suspend", "slow"]) }
        suspender.start()
        // Wait (bounded) for the app to reach background.
        let deadline = Date().addingTimeInterval(10)
        while (try? box.apps()["slow"]?.state) != .background && Date() < deadline { usleep(20_000) }
        let r = try box.icebox(["resume", "slow"])
        #expect(r.status == 0, "\(r.output)")
        #expect(r.stdout.contains("resumed during its grace period"))
        #expect(try box.apps()["slow"]?.state == .active)
    }

    @Test("switch resumes one app and sends the active one to the background")
    func appSwitcher() throws {
        let box = Sandbox()
        defer { box.close() }
        let app = box.pythonApp()
        _ = try box.icebox(["launch", "--ready", "notify", "mail", "--", "python3", app])
        _ = try box.icebox(["launch", "--ready", "notify", "maps", "--", "python3", app])
        _ = try box.icebox(["suspend", "maps"])
        _ = try box.icebox(["suspend", "mail"])
        _ = try box.icebox(["resume", "mail"])
        let r = try box.icebox(["switch", "maps"])
        #expect(r.status == 0, "\(r.output)")
        let apps = try box.apps()
        #expect(apps["maps"]?.state == .active)
        #expect(apps["mail"]?.state == .suspended)
    }
}

import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

extension KernelScenarios {
    /// Issue 9, item 5: a suspended app whose main process is moved out of its cgroup runs again
    /// (the kernel thaws a task moved to a cgroup that is not frozen), and `ps` must say so
    /// rather than "suspended"; the event log says where the process went. For the cgroup
    /// backends only: a process stopped with SIGSTOP stays stopped wherever it is moved.
    @Suite(
        .enabled(if: ScenarioProgram.unavailableReason == nil, "\(ScenarioProgram.unavailableReason ?? "")"),
        .timeLimit(.minutes(5)))
    struct LeftCgroupTests {
        @Test(
            "a suspended app whose main process is moved out of its cgroup is shown active, its rest thawed",
            arguments: [BackendKind.cgroup2])
        func mainMovedOut(backend: BackendKind) throws {
            let box = Sandbox("left\(backend)")
            defer { box.close() }
            let app = try ScenarioApp(box, "web", backend: backend, ["spawn", "1"], processes: 2)
            let dir = try #require(app.freezerDir)
            // Somewhere not frozen, outside icebox's cgroup root: a sibling directory.
            let away = (backend == .cgroup1 ? dir : app.cgroup).split(separator: "/").dropLast(2).joined(separator: "/")
            let elsewhere = "/" + away + "/" + URL(fileURLWithPath: box.dir).lastPathComponent + "-away"
            try Scenario.makeCgroup(elsewhere)
            defer {
                for pid in Sandbox.pids(in: elsewhere) { kill(pid, SIGKILL) }
                _ = Scenario.eventually(seconds: 5) { Glibc.rmdir(elsewhere) == 0 || errno != EBUSY }
            }
            try app.suspend()
            #expect(app.kernelFrozen)
            let rest = try #require(app.members.first { $0 != app.pid })

            try Scenario.move(app.pid, to: elsewhere)
            #expect(Scenario.runs(app.pid), "the kernel did not thaw the moved process")
            // ps tells the truth: the app runs.
            #expect(Scenario.eventually(seconds: 5) { app.state == .active }, "ps says \(String(describing: app.state))")
            let line = box.events("web").last { $0.detail.contains("left the app's cgroup") }
            #expect(line?.detail.contains(elsewhere) == true, "no event says where the process went: \(box.events("web").map(\.detail))")
            #expect(line?.to == .active)
            // The rest of the app is not left frozen under an app shown as active.
            #expect(Scenario.waitFrozen(dir, backend, false), "the app's cgroup is still frozen")
            #expect(Scenario.runs(rest))

            // A suspend now could freeze the cgroup but not the main process: it fails, saying why.
            let again = try box.icebox(["suspend", "web"])
            #expect(again.status == 1, "\(again.output)")
            #expect(again.output.contains("not in the app's cgroup"), "\(again.output)")
            #expect(app.state == .active)
            #expect(!Scenario.frozen(dir, backend))
            // Eviction still ends the main process, wherever it went.
            let handle = try ProcessHandle(adopting: app.pid)
            try app.evict()
            #expect(Scenario.allEnded([handle]))
        }

        @Test("the daemon hears of it on cgroup.events (populated 0) without being asked")
        func noticedOnEvents() throws {
            let box = Sandbox("leftevents")
            defer { box.close() }
            let app = try ScenarioApp(box, "web", backend: .cgroup2, ["idle"])
            try app.suspend()
            // Into the test's own cgroup (never frozen): the app's cgroup is empty afterwards.
            let mount = try #require(Sandbox.mounts.unifiedMount)
            let own = try #require(CgroupMembership.path(of: getpid(), mount: mount))
            try Scenario.move(app.pid, to: own)
            #expect(
                Scenario.eventually(seconds: 5) { box.events("web").contains { $0.detail.contains("left the app's cgroup for \(own)") } },
                "no event without a request: \(box.events("web").map(\.detail))")
            #expect(app.state == .active)
        }

        @Test("a suspended app's main process moved into a sub-cgroup of its own stays suspended")
        func movedWithin() throws {
            let box = Sandbox("leftwithin")
            defer { box.close() }
            let app = try ScenarioApp(box, "web", backend: .cgroup2, ["idle"])
            try app.suspend()
            try Scenario.makeCgroup(app.cgroup + "/inner")
            try Scenario.move(app.pid, to: app.cgroup + "/inner")
            #expect(Scenario.waitFrozen(app.cgroup + "/inner", .cgroup2, true))
            #expect(app.state == .suspended)
            #expect(!box.events("web").contains { $0.detail.contains("left the app's cgroup") })
            try app.resume()
            #expect(Scenario.runs(app.pid))
        }
    }
}

extension Scenario {
    /// Whether the process gets CPU time: its voluntary context switches grow within
    /// `seconds` (a ScenarioProgram naps 1 ms at a time; a frozen one never switches).
    static func runs(_ pid: pid_t, seconds: Double = 2) -> Bool {
        func switches() -> Int? {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
            return ProcFS.statusField("voluntary_ctxt_switches", in: text).flatMap { Int($0) }
        }
        guard let first = switches() else { return false }
        return eventually(seconds: seconds) { (switches() ?? first) > first + 2 }
    }
}

extension KernelScenarios.LeftCgroupTests {
    /// The cases on the v1 freezer: a host without a v1 freezer hierarchy (pure cgroup v2)
    /// skips them, saying why, instead of failing their launch.
    @Suite(.enabled(if: Sandbox.writableMounts.freezerV1 != nil, "\(LifecycleTests.freezerV1Reason)"))
    struct OnCgroup1 {
        @Test("a suspended app whose main process is moved out of its cgroup, on the v1 freezer") func mainMovedOut() throws {
            try KernelScenarios.LeftCgroupTests().mainMovedOut(backend: .cgroup1)
        }
    }
}

import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

extension KernelScenarios {
    /// The scenarios of the kernel's cgroup.kill selftest (tools/testing/selftests/cgroup/
    /// test_kill.c), played through `icebox evict` on an app icebox launched, on every backend:
    /// the verdict is every process's pidfd reporting its end, and the app's cgroups gone.
    @Suite(
        .enabled(if: ScenarioProgram.unavailableReason == nil, "\(ScenarioProgram.unavailableReason ?? "")"),
        .timeLimit(.minutes(5)))
    struct KernelKillTests {
        /// Every backend but the v1 freezer, whose cases are `OnCgroup1`'s (a condition of their own).
        static let everyBackend: [BackendKind] = [.cgroup2, .signal]

        @Test("test_cgkill_simple: a suspended app of 100 processes is evicted whole", arguments: everyBackend)
        func simple(backend: BackendKind) throws {
            let box = Sandbox("kkill\(backend)")
            defer { box.close() }
            let app = try ScenarioApp(box, "simple", backend: backend, ["spawn", "99"], processes: 100)
            try app.suspend()
            let handles = Scenario.handles(app.members)
            #expect(handles.count == 100)
            let r = try app.evict()
            #expect(r.stdout.contains("evicted"), "\(r.stdout)")
            #expect(Scenario.allEnded(handles), "a frozen process survived its eviction")
            #expect(app.expectRemoved())
            #expect(app.state == .evicted)
        }

        @Test(
            "test_cgkill_tree: a suspended app with processes in nested sub-cgroups is evicted whole", arguments: everyBackend
        )
        func tree(backend: BackendKind) throws {
            let box = Sandbox("kkilltree\(backend)")
            defer { box.close() }
            let app = try ScenarioApp(box, "tree", backend: backend, ["spawn", "5"], processes: 6)
            // The kernel's tree, in the app's v2 cgroup (where icebox finds its processes).
            let a = app.cgroup
            for sub in ["B", "B/C", "B/D", "E", "E/F", "E/F/G", "E/F/G/H", "I", "K"] { try Scenario.makeCgroup(a + "/" + sub) }
            let children = app.members.filter { $0 != app.pid }
            try #require(children.count == 5)
            for (pid, sub) in zip(children, ["B/C", "E/F/G/H", "K", "K", "K"]) { try Scenario.move(pid, to: a + "/" + sub) }
            // Beyond the kernel's test: one branch frozen on its own too (a cgroup-frozen task never
            // reads as stopped, so the SIGSTOP backend could not suspend the app: see the man page).
            if backend != .signal { try Scenario.setFrozen(a + "/E/F", .cgroup2, true) }
            try app.suspend()
            #expect(app.kernelFrozen, "not every process of the tree is frozen (or stopped)")
            let handles = Scenario.handles(app.members)
            #expect(handles.count == 6)
            try app.evict()
            #expect(Scenario.allEnded(handles), "a process in a sub-cgroup survived its eviction")
            #expect(app.expectRemoved())
        }

        @Test("test_cgkill_forkbomb: a fork bomb in flight is evicted whole", arguments: everyBackend)
        func forkbomb(backend: BackendKind) throws {
            let box = Sandbox("kkillbomb\(backend)")
            defer { box.close() }
            let app = try ScenarioApp(box, "bomb", backend: backend, ["forkbomb", "300"], processes: nil)
            // Handles for what exists now; the kill must get those forked after this too.
            let handles = Scenario.handles(app.members)
            try app.evict()
            #expect(Scenario.allEnded(handles))
            #expect(app.expectRemoved(), "a process forked during the eviction survived it")
        }
    }
}

extension ScenarioApp {
    /// Whether the app's cgroups are gone (the removal waits for them to be empty).
    func expectRemoved() -> Bool {
        !FileManager.default.fileExists(atPath: cgroup) && !(freezerDir.map { FileManager.default.fileExists(atPath: $0) } ?? false)
    }
}

extension KernelScenarios.KernelKillTests {
    /// The cases on the v1 freezer: a host without a v1 freezer hierarchy (pure cgroup v2)
    /// skips them, saying why, instead of failing their launch.
    @Suite(.enabled(if: Sandbox.writableMounts.freezerV1 != nil, "\(LifecycleTests.freezerV1Reason)"))
    struct OnCgroup1 {
        @Test("test_cgkill_simple, on the v1 freezer") func simple() throws {
            try KernelScenarios.KernelKillTests().simple(backend: .cgroup1)
        }
        @Test("test_cgkill_tree, on the v1 freezer") func tree() throws { try KernelScenarios.KernelKillTests().tree(backend: .cgroup1) }
        @Test("test_cgkill_forkbomb, on the v1 freezer") func forkbomb() throws {
            try KernelScenarios.KernelKillTests().forkbomb(backend: .cgroup1)
        }
    }
}

import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

extension KernelScenarios {
    /// Bugs other freezing supervisors shipped, as regressions for icebox, on every backend.
    /// (runc#5325, a failed freeze leaving `cgroup.freeze` at 1, is StuckFreezeTests in
    /// LoopTests.swift: a real task in D state, the freeze rolled back.)
    @Suite(
        .enabled(if: ScenarioProgram.unavailableReason == nil, "\(ScenarioProgram.unavailableReason ?? "")"),
        .timeLimit(.minutes(5)))
    struct PeerRegressionTests {
        /// Every backend but the v1 freezer, whose cases are `OnCgroup1`'s (a condition of their own).
        static let everyBackend: [BackendKind] = [.cgroup2, .signal]

        /// systemd#41842: a frozen unit killed from outside stayed "frozen" in systemctl.
        @Test("systemd#41842: a suspended app killed from outside is not shown as suspended once it is gone", arguments: everyBackend)
        func killedFromOutside(backend: BackendKind) throws {
            let box = Sandbox("peerkill\(backend)")
            defer { box.close() }
            let app = try ScenarioApp(box, "victim", backend: backend, ["spawn", "1"], processes: 2)
            try app.suspend()
            let handle = try ProcessHandle(adopting: app.pid)
            kill(app.pid, SIGKILL)
            if backend == .cgroup1 {
                // A task frozen by the v1 freezer acts on SIGKILL only once thawed: it is still
                // there, frozen, and "suspended" is the truth until icebox thaws it.
                #expect(!Scenario.allEnded([handle], seconds: 0.2), "a v1-frozen task died before its thaw")
                #expect(app.state == .suspended)
                _ = try box.icebox(["resume", "victim"])
            }
            #expect(Scenario.allEnded([handle]), "the main process did not die")
            // The daemon hears the end on the pidfd; ps must follow without any request to it.
            #expect(Scenario.eventually { app.state == .exited }, "ps says \(String(describing: app.state)) for an app that is gone")
            let record = try #require(try box.apps()[app.name])
            #expect(record.exitStatus == 128 + SIGKILL)
            #expect(app.expectRemoved(), "the rest of the app was not cleaned up")
        }

        /// moby#15853: SIGTERM to a paused container did nothing until it was unpaused.
        @Test("moby#15853: terminating a suspended app ends it, through its own SIGTERM handler", arguments: everyBackend)
        func terminateFrozen(backend: BackendKind) throws {
            let box = Sandbox("peerterm\(backend)")
            defer { box.close() }
            let mark = box.dir + "/term"
            let app = try ScenarioApp(box, "polite", backend: backend, ["term", mark])
            // Launched is exec'd, not yet past signal(): a SIGTERM before it kills by default.
            try #require(
                Scenario.eventually { ProcFS.catchesSignal(pid: app.pid, SIGTERM) }, "the app never set its SIGTERM handler")
            try app.suspend()
            #expect(app.kernelFrozen)
            let handle = try ProcessHandle(adopting: app.pid)
            let r = try box.icebox(["terminate", "--timeout", "5s", "polite"])
            #expect(r.status == 0, "\(r.output)")
            #expect(Scenario.allEnded([handle], seconds: 1))
            #expect(FileManager.default.contents(atPath: mark) == Data("term\n".utf8), "the app's SIGTERM handler did not run")
            #expect(app.state == .terminated)
            #expect(try box.apps()[app.name]?.exitStatus == 0)
        }
    }
}

extension KernelScenarios.PeerRegressionTests {
    /// The cases on the v1 freezer: a host without a v1 freezer hierarchy (pure cgroup v2)
    /// skips them, saying why, instead of failing their launch.
    @Suite(.enabled(if: Sandbox.writableMounts.freezerV1 != nil, "\(LifecycleTests.freezerV1Reason)"))
    struct OnCgroup1 {
        @Test("systemd#41842, a suspended app killed from outside, on the v1 freezer") func killedFromOutside() throws {
            try KernelScenarios.PeerRegressionTests().killedFromOutside(backend: .cgroup1)
        }
        @Test("moby#15853, terminating a suspended app, on the v1 freezer") func terminateFrozen() throws {
            try KernelScenarios.PeerRegressionTests().terminateFrozen(backend: .cgroup1)
        }
    }
}

import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

extension KernelScenarios {
    /// An app's freezer written by someone else: a suspended app thawed (a write to its
    /// freezer, or SIGCONT) runs, and an active app frozen (a write to its cgroup freezer) does
    /// not. icebox must say so, and do what is asked of it next, rather than answer "already
    /// suspended" or "already active".
    @Suite(
        .enabled(if: ScenarioProgram.unavailableReason == nil, "\(ScenarioProgram.unavailableReason ?? "")"),
        .timeLimit(.minutes(5)))
    struct FreezerWrittenOutsideTests {
        @Test(
            "a suspended app thawed outside icebox is active again, and a suspend freezes it",
            arguments: PeerRegressionTests.everyBackend)
        func thawedOutside(backend: BackendKind) throws {
            let box = Sandbox("outthaw\(backend)")
            defer { box.close() }
            let app = try ScenarioApp(box, "thawed", backend: backend, ["spawn", "1"], processes: 2)
            try app.suspend()
            #expect(app.kernelFrozen)
            if let dir = app.freezerDir {
                try Scenario.setFrozen(dir, backend, false)
                #expect(Scenario.waitFrozen(dir, backend, false), "the kernel did not thaw it")
            } else {
                for pid in app.members { kill(pid, SIGCONT) }
            }
            #expect(Scenario.eventually { app.kernelThawed }, "the app does not run again")
            if backend == .cgroup2 {
                // The daemon watches cgroup.events: ps follows without a request about the app.
                #expect(Scenario.eventually { app.state == .active }, "ps says \(String(describing: app.state))")
            }
            let r = try app.suspend()
            #expect(!r.output.contains("nothing to do"), "\(r.output)")
            #expect(app.kernelFrozen, "not frozen again")
            #expect(app.state == .suspended)
            let outside = box.events(app.name).filter { $0.kind == .thaw && $0.reason == "outside" }
            #expect(outside.count == 1, "\(box.events(app.name).map(\.detail))")
            try app.resume()
            #expect(app.kernelThawed)
        }

        /// SIGSTOP is left out: a process stopped by someone else (a terminal's ^Z) is theirs
        /// to continue, and the signal backend leaves it stopped.
        @Test(
            "an active app frozen outside icebox is suspended, and a resume thaws it",
            arguments: [BackendKind.cgroup2])
        func frozenOutside(backend: BackendKind) throws {
            let box = Sandbox("outfreeze\(backend)")
            defer { box.close() }
            let app = try ScenarioApp(box, "frozen", backend: backend, ["spawn", "1"], processes: 2)
            let dir = try #require(app.freezerDir)
            try Scenario.setFrozen(dir, backend, true)
            #expect(Scenario.waitFrozen(dir, backend, true), "the kernel did not freeze it")
            let r = try app.resume()
            #expect(!r.output.contains("nothing to do"), "\(r.output)")
            #expect(app.kernelThawed, "still frozen")
            #expect(app.state == .active)
            let outside = box.events(app.name).filter { $0.kind == .freeze && $0.reason == "outside" }
            #expect(outside.count == 1, "\(box.events(app.name).map(\.detail))")
            try app.suspend()
            #expect(app.kernelFrozen)
        }
    }
}

extension KernelScenarios.FreezerWrittenOutsideTests {
    /// The cases on the v1 freezer: a host without a v1 freezer hierarchy (pure cgroup v2)
    /// skips them, saying why, instead of failing their launch.
    @Suite(.enabled(if: Sandbox.writableMounts.freezerV1 != nil, "\(LifecycleTests.freezerV1Reason)"))
    struct OnCgroup1 {
        @Test("a suspended app thawed outside icebox, on the v1 freezer") func thawedOutside() throws {
            try KernelScenarios.FreezerWrittenOutsideTests().thawedOutside(backend: .cgroup1)
        }
        @Test("an active app frozen outside icebox, on the v1 freezer") func frozenOutside() throws {
            try KernelScenarios.FreezerWrittenOutsideTests().frozenOutside(backend: .cgroup1)
        }
    }
}

import Foundation
import IceboxCore
import Testing

/// The figures a test asserts on, read from the results (not parsed from text): how long
/// the kernel took to freeze and thaw, what froze, how the app ended.
@Suite(
    .serialized,
    .enabled(if: Host.problem == nil, "\(Host.problem ?? "")"),
    .timeLimit(.minutes(1))
)
struct TimingTests {
    @Test("freeze and thaw times are the kernel's, and within each call's own duration")
    func freezeAndThawTimes() throws {
        try Supervisor.with { supervisor in
            let app = try supervisor.launch(LaunchOptions(name: "nap", command: ["sleep", "100"]))
            #expect(app.readyMode == .exec && app.readyAfter != nil)
            let clock = ContinuousClock()

            var start = clock.now
            let suspended = try supervisor.suspend("nap", grace: .zero)
            let suspendCall = clock.now - start
            #expect(suspended.graceEnd == .zero)
            #expect(suspended.freezeTime > .zero && suspended.freezeTime <= suspendCall)
            #expect(suspended.tasks == 1 && suspended.backend != nil)
            #expect(suspended.freezeTime < .seconds(1), "one idle process freezes in well under a second")

            start = clock.now
            let resumed = try supervisor.resume("nap")
            let resumeCall = clock.now - start
            #expect(resumed.how == .thawed)
            let thaw = try #require(resumed.thawTime)
            #expect(thaw > .zero && thaw <= resumeCall)

            let ended = try supervisor.terminate("nap", timeout: .seconds(5))
            #expect(ended.how == .sigterm && ended.exitStatus == 128 + SIGTERM)
            #expect(Kernel.state(of: app.pid) == nil)
        }
    }
}

import Foundation
import IceboxCore
import Testing

/// The background notice and the grace, as an app that handles them sees them: icebox sends
/// SIGUSR1, the app saves its state and says READY=1, and icebox freezes it at once instead
/// of waiting out the grace. The result says so, and the kernel agrees.
@Suite(
    .serialized,
    .enabled(if: Host.problem == nil, "\(Host.problem ?? "")"),
    .enabled(if: Host.resolve("python3") != nil, "needs python3 on PATH"),
    .timeLimit(.minutes(1))
)
struct NoticeTests {
    @Test("an app that handles SIGUSR1 saves its state and ends its grace with READY=1")
    func noticeHandlerEndsTheGraceEarly() throws {
        try Supervisor.with { supervisor in
            let saved = supervisor.paths.stateDir + "/saved"
            var options = LaunchOptions(name: "editor", command: Apps.noticeHandler(python: Host.resolve("python3")!, savedTo: saved))
            options.ready = .notify  // launch returns once the app said READY=1
            options.grace = .seconds(20)  // the most it may take to save
            let app = try supervisor.launch(options)
            let cgroup = try #require(app.cgroup)

            let result = try supervisor.suspend("editor")
            #expect(result.notice == .signal(SIGUSR1), "the app was told")
            #expect(result.graceEnd == .ready, "it said READY=1 before its grace ran out")
            #expect(result.graceUsed < .seconds(20))
            #expect(FileManager.default.fileExists(atPath: saved), "it saved its state before the freeze")
            #expect(Kernel.events(of: cgroup)["frozen"] == "1")
        }
    }

    @Test("an app without a handler gets no notice (SIGUSR1 would kill it) and its whole grace")
    func noHandlerNoNotice() throws {
        try Supervisor.with { supervisor in
            var options = LaunchOptions(name: "nap", command: ["sleep", "100"])
            options.grace = .milliseconds(300)
            let app = try supervisor.launch(options)
            let result = try supervisor.suspend("nap")
            #expect(result.notice == .noHandler)
            #expect(result.graceEnd == .expired && result.graceUsed >= .milliseconds(300))
            #expect(Kernel.events(of: try #require(app.cgroup))["frozen"] == "1")
            #expect(Kernel.state(of: app.pid) != nil, "not killed by a signal it does not handle")
        }
    }
}

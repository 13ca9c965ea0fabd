import Foundation
import IceboxCore
import Testing

/// Failures a test expects: they throw an `IceboxError` with the exit code `icebox` would
/// exit with, and leave nothing behind.
@Suite(
    .serialized,
    .enabled(if: Host.problem == nil, "\(Host.problem ?? "")"),
    .timeLimit(.minutes(1))
)
struct ErrorTests {
    @Test("suspending an app that does not exist throws (exit code 1)")
    func unknownApp() throws {
        try Supervisor.with { supervisor in
            let error = #expect(throws: IceboxError.self) { try supervisor.suspend("ghost") }
            #expect(error?.code == .failure)
            #expect(error?.message.contains("ghost") == true)
        }
    }

    @Test("an app whose command cannot be found fails its launch (127) and leaves no process or cgroup")
    func missingCommand() throws {
        try Supervisor.with { supervisor in
            let root = try #require(supervisor.cgroupRoot)
            let error = #expect(throws: IceboxError.self) {
                try supervisor.launch(LaunchOptions(name: "typo", command: ["no-such-command-anywhere"]))
            }
            #expect(error?.code == .notFound)
            // The kernel's view: no cgroup left under the supervisor's root, no process in it.
            let children = try FileManager.default.contentsOfDirectory(atPath: root).filter {
                var isDirectory: ObjCBool = false
                return FileManager.default.fileExists(atPath: root + "/" + $0, isDirectory: &isDirectory) && isDirectory.boolValue
            }
            #expect(children.isEmpty, "cgroups left: \(children)")
            #expect(Kernel.processes(in: root).isEmpty)
            #expect(try supervisor.apps().isEmpty)
        }
    }
}

import Foundation
import Glibc
import IceboxCore
import Testing

/// docs/protocol.md is enough to drive the daemon: a client written from it in Python alone
/// (Examples/Python/icebox_client.py, no Swift) launches, suspends and resumes an app, and
/// the kernel agrees.
@Suite(
    .enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"),
    .enabled(if: LibraryBuild.python3 != nil, "python3 is not on PATH"), .timeLimit(.minutes(5)))
struct PythonProtocolClientTests {

    func client(_ box: Sandbox, _ args: [String]) throws -> Sandbox.Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try #require(LibraryBuild.python3))
        p.arguments = [LibraryBuild.packageRoot + "/Examples/Python/icebox_client.py"] + args
        p.environment = box.environment
        return try Sandbox.runToEnd(p, timeout: 30, what: "icebox_client.py \(args.joined(separator: " "))")
    }

    @Test(
        "a Python client speaking docs/protocol.md launches, suspends and resumes an app",
        .enabled(if: Sandbox.cgroupMissing == nil, "\(Sandbox.cgroupMissing ?? "")"))
    func pythonClientDrivesTheDaemon() throws {
        let box = Sandbox()
        defer { box.close() }
        // A daemon, started as any icebox command starts one, kept by an app of its own (it
        // exits idle about 1 s after it has neither apps nor clients).
        #expect(try box.icebox(["launch", "keeper", "--", "sleep", "1000"]).status == 0)
        let version = try client(box, ["version"])
        #expect(version.status == 0 && version.stdout == "protocol \(ControlRequest.protocolVersion)\n", "\(version.output)")

        let launched = try client(box, ["launch", "napper", "--", "sleep", "1000"])
        try #require(launched.status == 0, "\(launched.output)")
        let record = try #require(try box.apps()["napper"])
        let cgroup = try #require(Kernel.appCgroup(record))
        #expect(record.state == .active && Kernel.alive(record.pid))

        let suspended = try client(box, ["suspend", "napper", "0"])
        #expect(suspended.status == 0, "\(suspended.output)")
        #expect(Kernel.frozen(cgroup), "suspend answered \(suspended.output), the cgroup is not frozen")

        let resumed = try client(box, ["resume", "napper"])
        #expect(resumed.status == 0, "\(resumed.output)")
        #expect(!Kernel.frozen(cgroup))

        let ps = try client(box, ["ps"])
        #expect(ps.stdout.contains("napper active \(record.pid)"), "\(ps.output)")
        // An error is a warning reply and a done reply with its code.
        let missing = try client(box, ["suspend", "nobody"])
        #expect(missing.status == ExitCode.failure.rawValue && missing.stderr.contains("no app named 'nobody'"), "\(missing.output)")
        #expect(missing.stderr.contains("reason no_such_app nobody"), "the done reply's typed reason: \(missing.output)")
    }
}

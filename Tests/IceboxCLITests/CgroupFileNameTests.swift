import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// App names that are cgroup control files' names (`tasks`, `notify_on_release`,
/// `memory.force_empty`, `cgroup.procs`) are refused at launch (exit 64) with nothing left
/// behind; a v1 memory cgroup that cannot be made is reported, not dropped unseen.
@Suite(
    .enabled(if: Sandbox.cgroupMissing == nil, "\(Sandbox.cgroupMissing ?? "")"),
    .enabled(if: Sandbox.writableMounts.memoryV1 != nil, "needs a v1 memory hierarchy (hybrid host)"), .timeLimit(.minutes(5)))
struct CgroupFileNameTests {
    /// Every process in a cgroup directory under the sandbox's roots, sub-cgroups too.
    static func processes(_ box: Sandbox) -> [pid_t] {
        let memoryRoot = HostFacts.discover(cgroupRootOverride: box.cgroupRoot).memoryV1Root
        return [box.cgroupRoot, box.freezerRoot, memoryRoot].compactMap { $0 }.flatMap { CgroupTree.processes($0) }
    }

    @Test(
        "launch of an app named after a cgroup control file fails with exit 64, says why, and leaves nothing",
        arguments: ["tasks", "notify_on_release", "memory.force_empty", "cgroup.procs"])
    func refused(name: String) throws {
        let box = Sandbox()
        defer { box.close() }
        let r = try box.icebox(["launch", name, "--", "sleep", "100"])
        #expect(r.status == 64, "\(r.output)")
        #expect(r.stderr.contains("app name '\(name)' cannot be used"), "\(r.stderr)")
        #expect(r.stderr.contains("cgroup") && r.stderr.contains("choose another name"), "\(r.stderr)")
        #expect(try box.apps().isEmpty, "no app recorded")
        #expect(!FileManager.default.fileExists(atPath: box.stateDir + "/registry/\(name).json"))
        #expect(!FileIO.isDirectory(try #require(box.cgroupRoot) + "/" + name), "no cgroup made")
        #expect(Self.processes(box).isEmpty, "nothing runs: \(Self.processes(box))")
        let run = try box.icebox(["run", "--name", name, "--", "sleep", "100"])
        #expect(run.status == 64, "\(run.output)")
    }

    @Test("icebox run of a program called tasks gets the name tasks-app, with its v1 memory cgroup")
    func derivedName() throws {
        let box = Sandbox()
        defer { box.close() }
        let program = box.dir + "/tasks"
        try "#!/bin/sh\ncat /proc/self/cgroup\n".write(toFile: program, atomically: true, encoding: .utf8)
        chmod(program, 0o755)
        let r = try box.icebox(["run", "--", program])
        #expect(r.status == 0, "\(r.output)")
        let memoryLine = r.stdout.split(separator: "\n").first {
            $0.split(separator: ":").dropFirst().first?.split(separator: ",").contains("memory") == true
        }
        #expect(memoryLine?.hasSuffix("/tasks-app") == true, "the app's v1 memory cgroup: \(r.stdout)")
        #expect(box.events("tasks-app").contains { $0.kind == .spawn })
        #expect(!r.stderr.contains("warning"), "\(r.stderr)")
    }

    @Test("a v1 memory cgroup that cannot be made (another process holds that name) is reported: warning and event, the app runs")
    func memoryCgroupFailureIsReported() throws {
        let box = Sandbox()
        defer { box.close() }
        let memoryRoot = try #require(HostFacts.discover(cgroupRootOverride: box.cgroupRoot).memoryV1Root)
        // Someone else's process in <memory root>/web (another daemon with the same root).
        let taken = memoryRoot + "/web"
        try FileIO.makeDirectories(taken)
        let squatter = Process()
        squatter.executableURL = URL(fileURLWithPath: "/bin/sleep")
        squatter.arguments = ["1000"]
        try squatter.run()
        defer {
            // SIGKILL: the test process may block SIGTERM, and its children inherit the mask.
            kill(squatter.processIdentifier, SIGKILL)
            squatter.waitUntilExit()
        }
        try String(squatter.processIdentifier).write(toFile: taken + "/cgroup.procs", atomically: false, encoding: .utf8)

        let r = try box.icebox(["launch", "web", "--", "sleep", "1000"])
        #expect(r.status == 0, "\(r.output)")
        #expect(r.stderr.contains("warning: web: no v1 memory cgroup"), "\(r.stderr)")
        #expect(r.stderr.contains("already has 1 process in it"), "\(r.stderr)")
        #expect(box.events("web").contains { $0.kind == .error && $0.detail.contains("no v1 memory cgroup") }, "\(box.events("web"))")
        #expect(try box.apps()["web"]?.state == .active)
    }
}

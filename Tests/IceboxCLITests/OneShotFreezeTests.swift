import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// icebox freeze / thaw on processes and cgroups icebox did not launch.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(1)))
struct OneShotFreezeTests {
    @Test("freeze --pid stops a whole process tree; thaw resumes it")
    func processTree() throws {
        let box = Sandbox()
        defer { box.close() }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", "sleep 1000 & sleep 1000 & wait"]
        try p.run()
        defer {
            kill(-p.processIdentifier, SIGKILL); for pid in SignalFreezer.processTree(root: p.processIdentifier) { kill(pid, SIGKILL) };
            p.waitUntilExit()
        }
        var tree: [pid_t] = []
        let deadline = Date().addingTimeInterval(5)
        while tree.count < 3 && Date() < deadline { tree = SignalFreezer.processTree(root: p.processIdentifier); usleep(5_000) }
        #expect(tree.count == 3)
        let f = try box.icebox(["freeze", "--pid", String(p.processIdentifier)])
        #expect(f.status == 0, "\(f.output)")
        #expect(f.stdout.contains("frozen in"))
        for pid in tree { #expect(Kernel.processState(pid) == "T") }
        let t = try box.icebox(["thaw", "--pid", String(p.processIdentifier)])
        #expect(t.status == 0, "\(t.output)")
        for pid in tree { #expect(Kernel.processState(pid) != "T") }
    }

    @Test("freeze --cgroup freezes a v2 cgroup and confirms it")
    func cgroup() throws {
        let box = Sandbox()
        defer { box.close() }
        let cg = Cgroup2(path: box.cgroupRoot + "/external")
        try FileIO.makeDirectories(box.cgroupRoot)
        try cg.create()
        var req = SpawnRequest(executable: "/bin/sleep", arguments: ["sleep", "1000"], environment: [])
        req.cgroupDirFD = try cg.openDirectory()
        defer { close(req.cgroupDirFD) }
        let child = try Spawner.spawn(req)
        defer { _ = try? child.handle.send(SIGKILL); _ = try? child.handle.wait(until: Clock.monotonicNanos() + 5_000_000_000) }
        let f = try box.icebox(["freeze", "--cgroup", cg.path])
        #expect(f.status == 0, "\(f.output)")
        #expect(Kernel.cgroupFrozen(cg.path))
        let t = try box.icebox(["thaw", "--cgroup", cg.path])
        #expect(t.status == 0, "\(t.output)")
        #expect(!Kernel.cgroupFrozen(cg.path))
        let bad = try box.icebox(["freeze", "--pid", "999999999"])
        #expect(bad.status == 64 || bad.status == 1)
    }
}

import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// icebox freeze / thaw on processes and cgroups icebox did not launch.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
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

    @Test(
        "freeze --cgroup freezes a v2 cgroup and confirms it",
        .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"))
    func cgroup() throws {
        let box = Sandbox()
        defer { box.close() }
        let root = try #require(box.cgroupRoot)
        let cg = Cgroup2(path: root + "/external")
        try FileIO.makeDirectories(root)
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

    /// `icebox freeze --cgroup X` run from inside X (here from X/sub, as a container's shell is
    /// inside /sys/fs/cgroup) would freeze icebox with X: it could neither confirm the freeze
    /// nor roll it back, and only a thaw from outside would recover. Refused, exit 64, nothing
    /// frozen; for the v2 cgroup and the v1 freezer alike.
    @Test(
        "freeze --cgroup of a cgroup that holds icebox itself is refused (64) and nothing is frozen",
        .enabled(if: Sandbox.cgroupMissing == nil, "\(Sandbox.cgroupMissing ?? "")"))
    func cgroupHoldingTheCaller() throws {
        let box = Sandbox()
        defer { box.close() }
        // The v2 cgroup where the sandbox is under cgroup2, and the v1 freezer where there is one.
        var targets: [(String, String)] = []
        if Sandbox.backend == .cgroup2, let root = box.cgroupRoot { targets.append((root + "/holder", "cgroup.freeze")) }
        if let freezer = box.freezerRoot { targets.append((freezer + "/holder", "freezer.state")) }
        #expect(!targets.isEmpty)
        for (holder, stateFile) in targets {
            try FileIO.makeDirectories(holder + "/sub")
            defer { Self.release(holder, stateFile: stateFile) }
            // The shell joins holder/sub, then becomes icebox: icebox runs inside holder.
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/bin/sh")
            p.arguments = ["-c", #"echo $$ > "$0/sub/cgroup.procs" && exec "$1" freeze --cgroup "$0""#, holder, Sandbox.binary]
            p.environment = box.environment
            // Where the refusal is missing, icebox freezes itself: thawed from here after 8 s,
            // it ends, and the test fails on what it printed instead of hanging.
            // (Again each second: a v1 freezer may be mid-FREEZING at the first write.)
            let rescue = DispatchWorkItem {
                while p.isRunning {
                    _ = try? FileIO.write(holder + "/" + stateFile, stateFile == "cgroup.freeze" ? "0" : "THAWED")
                    usleep(1_000_000)
                }
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + 8, execute: rescue)
            let r = try Sandbox.runToEnd(p, timeout: 15, what: "icebox freeze --cgroup \(holder) from inside it")
            rescue.cancel()
            #expect(r.status == 64, "\(r.output)")
            #expect(r.stderr.contains("refusing to freeze \(holder): it contains icebox itself"), "\(r.stderr)")
            let state = (try? FileIO.read(holder + "/" + stateFile))?.trimmed() ?? "?"
            #expect(state == "0" || state == "THAWED", "\(holder) was frozen: \(stateFile) \(state)")
        }
    }

    /// The same for a process tree: `--pid` of an ancestor of icebox (the shell that runs it)
    /// would SIGSTOP icebox too.
    @Test("freeze --pid of a tree that holds icebox itself is refused (64) and nothing is stopped")
    func treeHoldingTheCaller() throws {
        let box = Sandbox()
        defer { box.close() }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        // Not exec: the shell stays icebox's parent, and waits for it.
        p.arguments = ["-c", #""$0" freeze --pid $$; echo "status $?""#, Sandbox.binary]
        p.environment = box.environment
        // Where the refusal is missing, the shell and icebox stop themselves: continued from
        // here after 8 s, so the test fails on what they printed instead of hanging.
        let rescue = DispatchWorkItem { for pid in SignalFreezer.processTree(root: p.processIdentifier) { kill(pid, SIGCONT) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + 8, execute: rescue)
        let r = try Sandbox.runToEnd(p, timeout: 15, what: "icebox freeze --pid of its own parent")
        rescue.cancel()
        #expect(r.stdout.contains("status 64"), "\(r.output)")
        #expect(r.stderr.contains("is one of its descendants"), "\(r.stderr)")
    }

    /// Thaws, kills and removes a holder cgroup and its sub-cgroup, whatever the test left.
    static func release(_ holder: String, stateFile: String) {
        for dir in [holder + "/sub", holder] {
            _ = try? FileIO.write(dir + "/" + stateFile, stateFile == "cgroup.freeze" ? "0" : "THAWED")
            for pid in Sandbox.pids(in: dir) { kill(pid, SIGKILL) }
        }
        for dir in [holder + "/sub", holder] {
            for _ in 0..<200 where rmdir(dir) != 0 && errno == EBUSY { usleep(10_000) }
        }
    }
}

import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// `--ready cmd:` probes run inside the app's cgroups (issue 33): what a probe leaves behind
/// is the app's, frozen when it is suspended and killed when it is evicted, never a process
/// outside every cgroup icebox looks after. It is not taken for the app's main process.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct ProbeCgroupTests {
    func leftBehind(backend: String) throws {
        let box = Sandbox("probecg\(backend)")
        defer { box.close() }
        let pidFile = box.dir + "/left.pid"
        // The probe starts a process that outlives it, then says ready.
        let probe = "cmd:sleep 1000 & echo $! > \(pidFile); exit 0"
        let r = try box.icebox([
            "launch", "--backend", backend, "--grace", "0", "--ready", probe, "--ready-timeout", "10s", "probed", "--", "sleep", "1000",
        ])
        try #require(r.status == 0, "\(r.output)")
        let left = try #require(
            pid_t(((try? String(contentsOfFile: pidFile, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)))
        defer { kill(left, SIGKILL) }  // should it have escaped
        let app = try #require(try box.apps()["probed"])
        #expect(app.state == .active && app.pid != left, "the probe's process taken for the app")
        let cgroup = try #require(app.cgroup)
        #expect(CgroupMembership.path(of: left, mount: Sandbox.mounts.unifiedMount!) == cgroup, "the probe's process is outside \(cgroup)")
        let freezer = backend == "cgroup1" ? app.freezerV1 : nil
        if let freezer, let mount = Sandbox.mounts.freezerV1Mount {
            #expect(CgroupMembership.path(of: left, controller: "freezer", mount: mount) == freezer)
        }

        // Frozen with the app, counted with it.
        let s = try box.icebox(["suspend", "probed"])
        #expect(s.status == 0, "\(s.output)")
        #expect(s.stdout.contains("2 processes"), "\(s.stdout)")
        if let freezer {
            #expect(Kernel.freezerState(freezer) == "FROZEN")
            #expect(Sandbox.pids(in: freezer).contains(left))
        } else {
            #expect(Kernel.cgroupFrozen(cgroup))
            #expect(Sandbox.pids(in: cgroup).contains(left))
        }

        // Evicted with it.
        let e = try box.icebox(["evict", "probed"])
        #expect(e.status == 0, "\(e.output)")
        #expect(!Kernel.alive(left), "the probe's process outlived the eviction")
        #expect(!FileManager.default.fileExists(atPath: cgroup))
    }

    @Test(
        "no probe attempt while the app's cgroup is frozen from outside: one cloned into it would stop before its exec, the daemon waiting",
        .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"))
    func frozenWhileLaunching() throws {
        let box = Sandbox()
        defer { box.close() }
        let go = box.dir + "/go"
        let launch = Process()
        launch.executableURL = URL(fileURLWithPath: Sandbox.binary)
        launch.arguments = [
            "launch", "--grace", "0", "--ready", "cmd:echo >> \(box.dir)/attempts; test -e \(go)", "--ready-timeout", "20s", "slow", "--",
            "sleep", "1000",
        ]
        launch.environment = box.environment
        launch.standardOutput = FileHandle.nullDevice
        launch.standardError = FileHandle.nullDevice
        try launch.run()
        defer {
            if launch.isRunning { kill(launch.processIdentifier, SIGKILL) }
            launch.waitUntilExit()
        }
        let cgroup = try #require(box.cgroupRoot) + "/slow"
        let deadline = Date().addingTimeInterval(10)
        // Five attempts made: the back-off is at 160 ms, so the freeze does not land in the
        // middle of a probe's spawn (the freeze from outside this guards against is rare; one
        // that lands in a spawn holds the daemon until the thaw, as the app's own spawn would).
        func attempts() -> Int { ((try? String(contentsOfFile: box.dir + "/attempts", encoding: .utf8)) ?? "").count }
        while attempts() < 5 && Date() < deadline { usleep(2_000) }
        try "1".write(toFile: cgroup + "/cgroup.freeze", atomically: false, encoding: .utf8)
        defer { try? "0".write(toFile: cgroup + "/cgroup.freeze", atomically: false, encoding: .utf8) }
        while !Kernel.cgroupFrozen(cgroup) && Date() < deadline { usleep(2_000) }
        usleep(600_000)  // the back-off (10 ms doubling to 200 ms): several attempts are due meanwhile
        let ps = try box.icebox(["ps", "--all"], timeout: 5)
        #expect(ps.status == 0 && ps.stdout.contains("slow"), "the daemon stopped answering: \(ps.output)")
        try "0".write(toFile: cgroup + "/cgroup.freeze", atomically: false, encoding: .utf8)
        #expect(FileManager.default.createFile(atPath: go, contents: nil))
        launch.waitUntilExit()
        #expect(launch.terminationStatus == 0)
        #expect(try box.apps()["slow"]?.state == .active)
    }

    @Test("a cmd: probe starts with the descriptor limit the app gets, not the daemon's raised one")
    func descriptorLimit() throws {
        let box = Sandbox()
        defer { box.close() }
        // The daemon this launch starts inherits a soft limit of 1024 and raises its own.
        let r = try box.run(
            "/bin/sh",
            [
                "-c", "ulimit -Sn 1024 && exec \"$0\" \"$@\"", Sandbox.binary, "launch", "--grace", "0", "--ready",
                "cmd:test \"$(ulimit -n)\" = 1024", "--ready-timeout", "3s", "lim", "--", "sleep", "1000",
            ])
        #expect(r.status == 0, "\(r.output)")
        #expect(try box.apps()["lim"]?.state == .active)
    }

    @Test(
        "cgroup2: what a cmd: probe leaves running is in the app's cgroup, frozen with it, gone after evict",
        .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"))
    func cgroup2() throws { try leftBehind(backend: "cgroup2") }

    @Test(
        "cgroup1: what a cmd: probe leaves running is in the app's v1 freezer cgroup too, frozen with it, gone after evict",
        .enabled(if: Sandbox.writableMounts.freezerV1 != nil, "no v1 freezer hierarchy"),
        .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"))
    func cgroup1() throws { try leftBehind(backend: "cgroup1") }
}

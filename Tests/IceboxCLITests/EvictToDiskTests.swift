import Foundation
import Glibc
import IceboxSystem
import Testing

@testable import IceboxCore

/// Evicting to disk with the real criu (issue 32): a suspended --pid-namespace app
/// checkpointed, its processes and memory gone (checked from the kernel), restored on resume
/// with its pids inside and its count going on; an HTTP server answering after its restore;
/// the memory policy choosing disk; a dump that cannot succeed falling back to a kill; a
/// daemon killed during a dump losing nothing; a restore that fails relaunching cold.
@Suite(
    "evict --to-disk: checkpoint and restore with criu", .serialized,
    // A cgroup freezer: icebox checkpoints no app SIGSTOP holds (criu would restore it stopped).
    .enabled(if: Sandbox.cgroupMissing == nil, "\(Sandbox.cgroupMissing ?? "")"),
    .enabled(if: PIDNamespaceTests.criu != nil, "no working criu >= 4.1 here (run scripts/criu as root to build one)"))
struct EvictToDiskTests {

    /// A python counter writing its count (and its pid inside its namespace) to `file`.
    static func counter(_ file: String, megabytes: Int = 0) -> String {
        """
        import os, time
        ballast = bytearray(\(megabytes) << 20)
        for i in range(0, len(ballast), 4096): ballast[i] = 1
        i = 0
        while True:
            i += 1
            with open('\(file).tmp', 'w') as f: f.write('%d %d' % (i, os.getpid()))
            os.rename('\(file).tmp', '\(file)')
            time.sleep(0.02)
        """
    }

    /// (count, pid inside its namespace) as the counter last wrote them.
    static func read(_ file: String) -> (count: Int, pid: Int) {
        let parts = ((try? FileIO.read(file)) ?? "").split(separator: " ").compactMap { Int($0) }  // not written yet: zeros
        return parts.count == 2 ? (parts[0], parts[1]) : (0, 0)
    }

    static func waitFor(_ what: String, seconds: UInt64 = 20, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Clock.monotonicNanos() + seconds * 1_000_000_000
        while Clock.monotonicNanos() < deadline {
            if try condition() { return true }
            usleep(20_000)
        }
        return try condition()
    }

    static func launchCounter(
        _ box: Sandbox, name: String, megabytes: Int = 0, pidNamespace: Bool = true, extra: [String] = []
    ) throws -> String {
        let file = box.dir + "/\(name).count"
        let r = try box.icebox(
            ["launch"] + (pidNamespace ? ["--pid-namespace"] : []) + extra + [
                name, "--", "python3", "-c", counter(file, megabytes: megabytes),
            ])
        #expect(r.status == 0, "\(r.output)")
        #expect(waitFor("the count") { read(file).count >= 3 })
        return file
    }

    /// Launches a --pid-namespace app that appends its ICEBOX_LAUNCH_REASON to a file at each
    /// start, and suspends it; returns the file.
    static func launchReasonRecorder(_ box: Sandbox, name: String) throws -> String {
        let reason = box.dir + "/reason"
        let source =
            "import os, time\nopen('\(reason)', 'a').write(os.environ.get('ICEBOX_LAUNCH_REASON', '?') + '\\n')\nwhile True: time.sleep(1)\n"
        #expect(try box.icebox(["launch", "--pid-namespace", name, "--", "python3", "-c", source]).status == 0)
        // Its line written, not just its file made: a suspend between the two (under load, in
        // CI) froze and dumped the line unwritten, and the file then read ["restore"] only.
        #expect(waitFor("its start") { (try? FileIO.read(reason)) == "fresh\n" })
        #expect(try box.icebox(["suspend", "--grace", "0", name]).status == 0)
        return reason
    }

    @Test(
        "a counting app evicted to disk is gone from memory and comes back on resume with the same pid inside, counting on")
    func countGoesOn() throws {
        let box = Sandbox("disk-count")
        defer { box.close() }
        let file = try Self.launchCounter(box, name: "counter", megabytes: 32)
        let before = try #require(try box.apps()["counter"])
        let cgroup = try #require(Kernel.appCgroup(before))
        #expect(try box.icebox(["suspend", "--grace", "0", "counter"]).status == 0)
        let frozenAt = Self.read(file)
        // Its memory as the kernel counts it (memory.current, or the v1 memory cgroup's usage).
        let charged = try box.apps()["counter"]?.memoryBytes ?? 0
        #expect(charged > 32 << 20, "the app's cgroup holds its memory: \(charged)")
        let memoryV1 = before.memoryV1

        let r = try box.icebox(["evict", "--to-disk", "counter"])
        #expect(r.status == 0, "\(r.output)")
        #expect(r.stdout.contains("suspended → on-disk") && r.stdout.contains("checkpointed to disk"), "\(r.stdout)")
        // From the kernel: no process of it, no cgroup (its memory charged nowhere).
        #expect(!Kernel.alive(before.pid))
        #expect(!FileIO.exists(cgroup), "\(cgroup) is left")
        if let memoryV1 { #expect(!FileIO.exists(memoryV1), "\(memoryV1) is left") }
        let onDisk = try #require(try box.apps()["counter"])
        #expect(onDisk.state == .onDisk && (onDisk.imageBytes ?? 0) > 32 << 20, "\(onDisk.state) \(String(describing: onDisk.imageBytes))")
        let images = try #require(onDisk.images)
        var st = stat()
        #expect(lstat(images, &st) == 0 && st.st_mode & 0o777 == 0o700 && st.st_uid == geteuid())
        #expect(lstat(box.stateDir + "/images", &st) == 0 && st.st_mode & 0o777 == 0o700)
        #expect(Self.read(file).count == frozenAt.count, "nothing counted while on disk")
        let e = try #require(box.events("counter").last { $0.kind == .checkpoint && $0.to == .onDisk })
        #expect((e.memoryBeforeBytes ?? 0) > 32 << 20 && e.imageBytes == onDisk.imageBytes && e.durationNanos != nil)
        // `ps` without --all shows it: it is not ended.
        #expect(try box.icebox(["ps"]).stdout.contains("on-disk"))

        let resumed = try box.icebox(["resume", "counter"])
        #expect(resumed.status == 0, "\(resumed.output)")
        #expect(resumed.stdout.contains("on-disk → active") && resumed.stdout.contains("restored from disk"), "\(resumed.stdout)")
        #expect(Self.waitFor("the count to go on") { Self.read(file).count > frozenAt.count })
        let after = Self.read(file)
        #expect(after.pid == frozenAt.pid && after.pid == 2, "the same pid inside its namespace: \(frozenAt.pid) → \(after.pid)")
        let active = try #require(try box.apps()["counter"])
        #expect(active.state == .active && active.images == nil && Kernel.alive(active.pid))
        #expect(Set(Sandbox.pids(in: cgroup)).contains(active.pid), "restored into its cgroup")
        #expect(!FileIO.exists(images), "the images go once it runs again")
        // Ours again: suspend, resume and terminate work, its exit status known.
        #expect(try box.icebox(["suspend", "--grace", "0", "counter"]).status == 0)
        #expect(Kernel.frozen(cgroup))
        #expect(try box.icebox(["resume", "counter"]).status == 0)
        #expect(try box.icebox(["terminate", "counter"]).status == 0)
        #expect(try box.apps()["counter"]?.exitStatus == 143)
    }

    @Test(
        "an HTTP server evicted to disk answers a GET after its restore")
    func httpServer() throws {
        let box = Sandbox("disk-http")
        defer { box.close() }
        let port = 20_000 + Int(getpid() % 20_000)
        try "restored\n".write(toFile: box.dir + "/index.txt", atomically: true, encoding: .utf8)
        let r = try box.icebox([
            "launch", "--pid-namespace", "--ready", "tcp:\(port)", "--cwd", box.dir, "web", "--",
            "python3", "-m", "http.server", "--bind", "127.0.0.1", String(port),
        ])
        #expect(r.status == 0, "\(r.output)")
        func get() -> String? {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            p.arguments = [
                "-c",
                "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:\(port)/index.txt', timeout=5).read().decode())",
            ]
            return try? Sandbox.runToEnd(p, timeout: 20, what: "GET").stdout
        }
        #expect(get()?.contains("restored") == true)
        #expect(try box.icebox(["suspend", "--grace", "0", "web"]).status == 0)
        let evicted = try box.icebox(["evict", "--to-disk", "web"])
        #expect(evicted.status == 0, "\(evicted.output)")
        // Why not, if not: what evict printed and the checkpoint's events (it failed once in
        // CI, under load, with nothing said).
        #expect(
            try box.apps()["web"]?.state == .onDisk,
            "\(evicted.output) \(box.events("web").filter { $0.kind == .checkpoint }.map(\.detail))")
        #expect(try box.icebox(["resume", "web"]).status == 0)
        #expect(get()?.contains("restored") == true, "the restored server answers")
    }

    @Test(
        "the memory policy with --evict-to disk checkpoints the suspended app it chooses, freeing its memory, an app's own --evict-to winning; resume brings it back"
    )
    func policyToDisk() throws {
        let box = Sandbox("disk-policy")
        defer { box.close() }
        let file = try Self.launchCounter(box, name: "old", megabytes: 48)
        let record = try #require(try box.apps()["old"])
        let cgroup = try #require(Kernel.appCgroup(record))
        #expect(try box.icebox(["policy", "set", "--evict-to", "disk", "--max-suspended", "0"]).status == 0)
        #expect(try box.icebox(["suspend", "--grace", "0", "old"]).status == 0)
        #expect(try Self.waitFor("the policy's checkpoint") { try box.apps()["old"]?.state == .onDisk })
        #expect(!Kernel.alive(record.pid) && !FileIO.exists(cgroup), "its processes and cgroup are gone")
        let e = try #require(box.events("old").last { $0.kind == .checkpoint && $0.to == .onDisk })
        #expect((e.memoryBeforeBytes ?? 0) > 48 << 20, "the memory it freed: \(String(describing: e.memoryBeforeBytes))")
        #expect(box.events("old").contains { $0.kind == .policy && $0.detail.contains("checkpoint to disk") })
        let stopped = Self.read(file).count
        // An app's own --evict-to wins over the policy's, both ways.
        _ = try Self.launchCounter(box, name: "killme", extra: ["--evict-to", "kill"])
        #expect(try box.icebox(["suspend", "--grace", "0", "killme"]).status == 0)
        #expect(try Self.waitFor("the policy's kill") { try box.apps()["killme"]?.state == .evicted })
        #expect(try box.icebox(["policy", "set", "--evict-to", "kill"]).status == 0)
        _ = try Self.launchCounter(box, name: "perapp", extra: ["--evict-to", "disk"])
        #expect(try box.icebox(["suspend", "--grace", "0", "perapp"]).status == 0)
        #expect(try Self.waitFor("the policy's checkpoint of perapp") { try box.apps()["perapp"]?.state == .onDisk })
        #expect(try box.icebox(["policy", "set", "--max-suspended", "none"]).status == 0)
        #expect(try box.icebox(["resume", "old"]).status == 0)
        #expect(Self.waitFor("the count to go on") { Self.read(file).count > stopped })
    }

    @Test(
        "a dump that cannot succeed falls back to a kill, the reason logged: a socket to outside, and an app without --pid-namespace")
    func fallsBackToAKill() throws {
        let box = Sandbox("disk-fallback")
        defer { box.close() }
        // A stream unix socket whose other end this test holds: criu cannot dump half of it.
        let path = box.dir + "/peer.sock"
        let listener = try UnixSocket.listen(path: path)
        defer { close(listener) }
        let client = "import socket, time\ns = socket.socket(socket.AF_UNIX)\ns.connect('\(path)')\nwhile True: time.sleep(1)\n"
        #expect(try box.icebox(["launch", "--pid-namespace", "tied", "--", "python3", "-c", client]).status == 0)
        #expect(Self.waitFor("the connection") { Poll.ready(listener, Int16(POLLIN)) })
        let peer = accept(listener, nil, nil)
        defer { if peer >= 0 { close(peer) } }
        _ = try Self.launchCounter(box, name: "plain", pidNamespace: false)
        let user = try box.icebox(["launch", "--pid-namespace", "--user", "nobody", "other", "--", "sleep", "1000"])
        #expect(user.status == 0, "\(user.output)")
        for name in ["tied", "plain", "other"] {
            let pid = try #require(try box.apps()[name]?.pid)
            #expect(try box.icebox(["suspend", "--grace", "0", name]).status == 0)
            let r = try box.icebox(["evict", "--to-disk", name])
            #expect(r.status == 0, "\(r.output)")
            let record = try #require(try box.apps()[name])
            #expect(record.state == .evicted && record.killedWhileSuspended && record.images == nil, "\(name): \(record.state)")
            #expect(!Kernel.alive(pid))
            let failed = try #require(box.events(name).last { $0.kind == .checkpoint && $0.reason == "failed" })
            let why = ["tied": "stream unix socket", "plain": "without --pid-namespace", "other": "runs as another user"][name] ?? ""
            #expect(failed.detail.contains(why) && failed.detail.contains("evicting it by a kill instead"), "\(failed.detail)")
        }
        #expect(((try? FileIO.list(box.stateDir + "/images")) ?? []).isEmpty, "no images left")
    }

    @Test(
        "a daemon killed in the middle of a dump loses nothing: its successor waits for criu and finds the app on disk or in memory")
    func daemonKilledDuringTheDump() throws {
        let box = Sandbox("disk-crash")
        defer { box.close() }
        let file = try Self.launchCounter(box, name: "big", megabytes: 300)
        #expect(try box.icebox(["suspend", "--grace", "0", "big"]).status == 0)
        let stopped = Self.read(file)
        let daemon = try #require(box.daemonPID)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Sandbox.binary)
        p.arguments = ["evict", "--to-disk", "big"]
        p.environment = box.environment
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        defer { if p.isRunning { p.terminate() } }
        #expect(Self.waitFor("criu to start") { box.events("big").contains { $0.detail.hasPrefix("criu dump started") } })
        kill(daemon, SIGKILL)
        p.waitUntilExit()
        // The next daemon (started by this command) waits for the criu left running.
        let record = try #require(try box.apps()["big"])
        #expect(record.state == .onDisk || record.state == .suspended, "\(record.state): lost")
        if record.state == .onDisk {
            #expect(FileIO.exists((record.images ?? "") + "/complete"))
        }
        #expect(try box.icebox(["resume", "big"]).status == 0)
        #expect(Self.waitFor("the count to go on") { Self.read(file).count > stopped.count })
        #expect(Self.read(file).pid == stopped.pid, "the same process, not a relaunch")
        let live = try box.apps().values.filter { $0.state == .active }
        #expect(live.count == 1, "never twice: \(live.map(\.name))")
    }

    @Test(
        "a daemon killed in the middle of a restore loses nothing: its successor finds the app restored (or still on disk), once")
    func daemonKilledDuringTheRestore() throws {
        let box = Sandbox("disk-crash-restore")
        defer { box.close() }
        let file = try Self.launchCounter(box, name: "big", megabytes: 300)
        #expect(try box.icebox(["suspend", "--grace", "0", "big"]).status == 0)
        #expect(try box.icebox(["evict", "--to-disk", "big"]).status == 0)
        let stopped = Self.read(file)
        let daemon = try #require(box.daemonPID)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Sandbox.binary)
        p.arguments = ["resume", "big"]
        p.environment = box.environment
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        defer { if p.isRunning { p.terminate() } }
        // The record of intent names the restore before criu goes on.
        let record = box.stateDir + "/registry/big.json"
        #expect(Self.waitFor("the restore's intent") { ((try? FileIO.read(record)) ?? "").contains("\"disk_intent\":\"restore\"") })
        kill(daemon, SIGKILL)
        p.waitUntilExit()
        let after = try #require(try box.apps()["big"])
        #expect(after.state == .active || after.state == .onDisk, "\(after.state): lost")
        if after.state == .onDisk { #expect(try box.icebox(["resume", "big"]).status == 0) }
        #expect(Self.waitFor("the count to go on") { Self.read(file).count > stopped.count })
        #expect(Self.read(file).pid == stopped.pid, "the same process, not a relaunch")
        let running = try #require(try box.apps()["big"])
        #expect(running.state == .active && running.images == nil && Kernel.alive(running.pid))
        #expect(((try? FileIO.list(box.stateDir + "/images")) ?? []).isEmpty, "restored once: no images left")
        // Its cgroup holds exactly one app: the restored one, never a second copy.
        if let cgroup = running.cgroup { #expect(Sandbox.pids(in: cgroup).count == 2, "\(Sandbox.pids(in: cgroup))") }
    }

    @Test(
        "a restore that fails relaunches the app cold, told to restore its state; terminate of an app on disk discards its images")
    func failedRestoreRelaunchesCold() throws {
        let box = Sandbox("disk-cold")
        defer { box.close() }
        let reason = try Self.launchReasonRecorder(box, name: "app")
        #expect(try box.icebox(["evict", "--to-disk", "app"]).status == 0)
        let images = try #require(try box.apps()["app"]?.images)
        // Its images damaged on disk: the restore fails.
        for file in try FileIO.list(images) where file.hasPrefix("core-") { unlink(images + "/" + file) }
        let r = try box.icebox(["resume", "app"])
        #expect(r.status != 0 && r.stderr.contains("could not be restored from disk"), "\(r.output)")
        #expect(Self.waitFor("the cold relaunch") { ((try? FileIO.read(reason)) ?? "").contains("restore") })
        #expect(((try? FileIO.read(reason)) ?? "").split(separator: "\n") == ["fresh", "restore"])
        #expect(try box.apps()["app"]?.state == .active)
        #expect(!FileIO.exists(images))
        #expect(box.events("app").contains { $0.kind == .restore && $0.reason == "failed" })

        #expect(try box.icebox(["suspend", "--grace", "0", "app"]).status == 0)
        #expect(try box.icebox(["evict", "--to-disk", "app"]).status == 0)
        let again = try #require(try box.apps()["app"]?.images)
        #expect(try box.icebox(["terminate", "app"]).status == 0)
        #expect(try box.apps()["app"]?.state == .terminated && !FileIO.exists(again))
    }

    @Test(
        "a criu that runs past --criu-timeout is killed: the dump falls back to a kill, the restore to a cold relaunch, nothing left behind"
    )
    func criuTimeoutKills() throws {
        let box = Sandbox("disk-timeout")
        defer { box.close() }
        func criuRunning(_ images: String) -> Bool {
            (try? FileIO.list("/proc"))?.contains { pid in
                Int32(pid) != nil && ((try? FileIO.read("/proc/\(pid)/cmdline")) ?? "").contains(images)
            } ?? false
        }
        // The dump: a criu that cannot be done in 1 ms (it takes tens at least) is killed, the
        // app evicted by a kill instead, its images gone.
        _ = try Self.launchCounter(box, name: "dumped", megabytes: 32)
        let launched = try #require(try box.apps()["dumped"])
        let pid = launched.pid
        let cgroup = try #require(Kernel.appCgroup(launched))
        #expect(try box.icebox(["suspend", "--grace", "0", "dumped"]).status == 0)
        #expect(try box.icebox(["policy", "set", "--criu-timeout", "1ms"]).status == 0)
        #expect(try box.icebox(["policy"]).stdout.contains("criu timeout       1.00 ms"))
        let r = try box.icebox(["evict", "--to-disk", "dumped"])
        #expect(r.status == 0, "\(r.output)")
        let failed = try #require(box.events("dumped").last { $0.kind == .checkpoint && $0.reason == "failed" })
        #expect(
            failed.detail.contains("criu dump ran past its deadline (1.00 ms, --criu-timeout): killed")
                && failed.detail.contains("evicting it by a kill instead"), "\(failed.detail)")
        let record = try #require(try box.apps()["dumped"])
        #expect(record.state == .evicted && record.images == nil && !Kernel.alive(pid), "\(record.state)")
        #expect(!FileIO.exists(cgroup), "\(cgroup) is left")
        #expect(((try? FileIO.list(box.stateDir + "/images")) ?? []).isEmpty, "no images left")

        // The restore: dumped within the default, restored within 1 ms, which criu cannot do.
        let reason = try Self.launchReasonRecorder(box, name: "restored")
        #expect(try box.icebox(["policy", "set", "--criu-timeout", "2m"]).status == 0)
        #expect(try box.icebox(["evict", "--to-disk", "restored"]).status == 0)
        let images = try #require(try box.apps()["restored"]?.images)
        #expect(try box.icebox(["policy", "set", "--criu-timeout", "1ms"]).status == 0)
        let resumed = try box.icebox(["resume", "restored"])
        #expect(resumed.status != 0 && resumed.stderr.contains("could not be restored from disk"), "\(resumed.output)")
        #expect(resumed.stderr.contains("criu restore ran past its deadline (1.00 ms, --criu-timeout): killed"), "\(resumed.stderr)")
        #expect(
            Self.waitFor("the cold relaunch") { ((try? FileIO.read(reason)) ?? "").split(separator: "\n") == ["fresh", "restore"] },
            "launch reasons: \((try? FileIO.read(reason)) ?? "none")")
        #expect(try box.apps()["restored"]?.state == .active)
        #expect(!FileIO.exists(images) && !criuRunning(images), "the images gone, no criu left on them")
        #expect(box.events("restored").contains { $0.kind == .restore && $0.reason == "failed" && $0.detail.contains("--criu-timeout") })
    }

    @Test(
        "a successor daemon waits for the criu the last one left only until that criu's own deadline (--criu-timeout from its start)"
    )
    func successorKeepsTheLeftCriusDeadline() throws {
        let box = Sandbox("disk-left-deadline")
        defer { box.close() }
        let criu = try #require(PIDNamespaceTests.criu)
        // A criu that never ends its dump of the app "stuck"; the probe's runs are the real criu's.
        let wrapper = box.dir + "/criu"
        try FileIO.writeAtomically(
            wrapper, "#!/bin/sh\ncase \"$*\" in *\"/images/stuck\"*) exec sleep 1000;; esac\nexec \(criu) \"$@\"\n", mode: 0o755)
        let env = ["ICEBOX_CRIU": wrapper]
        #expect(try box.icebox(["policy", "set", "--criu-timeout", "6s"], extraEnv: env).status == 0)
        #expect(try box.icebox(["launch", "--pid-namespace", "stuck", "--", "sleep", "1000"], extraEnv: env).status == 0)
        #expect(try box.icebox(["suspend", "--grace", "0", "stuck"], extraEnv: env).status == 0)
        let daemon = try #require(box.daemonPID)
        let evict = Sandbox.Background(box, ["evict", "--to-disk", "stuck"], extraEnv: env)
        #expect(Self.waitFor("criu to start") { box.events("stuck").contains { $0.detail.hasPrefix("criu dump started") } })
        let registry = box.stateDir + "/registry/stuck.json"
        let record = try #require(JSONLines.decode(AppRecord.self, try FileIO.read(registry)))
        let left = try #require(record.diskWorker), began = try #require(record.diskIntentStartNanos)
        kill(daemon, SIGKILL)
        _ = evict.result(within: 30)
        // The successor (started by this command) finds the criu still running after its
        // deadline, 6 s from the dump's start, has passed: it kills it without waiting, where
        // it waited 2 minutes whatever the setting (or 6 s more, counting from its own start).
        let deadline = began + 6_000_000_000
        while Clock.monotonicNanos() < deadline { usleep(UInt32(min(deadline - Clock.monotonicNanos(), 500_000_000) / 1000)) }
        let start = Clock.monotonicNanos()
        let r = try box.icebox(["ps", "--all"], extraEnv: env, timeout: 150)
        let waited = Double(Clock.monotonicNanos() - start) / 1e9
        #expect(r.status == 0, "\(r.output)")
        #expect(waited < 5, "the successor waited \(waited) s for a criu whose deadline had passed")
        #expect(!Kernel.alive(left), "the left criu (pid \(left)) still runs")
        let killed = box.events("stuck").contains { $0.detail.contains("(pid \(left)) the last daemon left ran past its deadline (6.0s") }
        #expect(killed, "\(box.events("stuck").map(\.detail))")
        // The dump never finished: the app is still in memory, suspended, and ours.
        #expect(try box.apps()["stuck"]?.state == .suspended)
        #expect(try box.icebox(["terminate", "stuck"], extraEnv: env).status == 0)
    }

    @Test(
        "the library's typed results: evict(toDisk:) says checkpointed with the image and memory freed, or why it fell back; resume says restored"
    )
    func typedResults() throws {
        let box = Sandbox("disk-typed")
        defer { box.close() }
        _ = try Self.launchCounter(box, name: "typed", megabytes: 16)
        _ = try Self.launchCounter(box, name: "plain", pidNamespace: false)
        let client = IceboxClient(runtimeDirectory: box.runtimeDir, stateDirectory: box.stateDir)
        _ = try client.suspend(["typed", "plain"], grace: .zero)
        let ended = try client.evict(["typed", "plain"], toDisk: true)
        #expect(ended[0].how == .checkpointed && ended[0].state == .onDisk, "\(ended[0])")
        #expect((ended[0].imageBytes ?? 0) > 16 << 20 && (ended[0].memoryFreedBytes ?? 0) > 16 << 20 && ended[0].checkpointFailure == nil)
        #expect(ended[1].how == .evicted && ended[1].state == .evicted, "\(ended[1])")
        #expect(
            ended[1].checkpointFailure?.contains("without --pid-namespace") == true, "\(String(describing: ended[1].checkpointFailure))")
        let resumed = try client.resume("typed")
        #expect(resumed.how == .restored && (resumed.restoreTime ?? .zero) > .zero, "\(resumed)")
        #expect(try box.apps()["typed"]?.state == .active)
    }
}

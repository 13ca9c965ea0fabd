import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// Directories, files and daemons that belong to someone else are refused (exit 77) before
/// anything is sent or written; a user refused by another user's daemon is told why.
@Suite(
    .enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"),
    .enabled(if: OtherUser.available, "needs setpriv (util-linux) to act as another user"), .timeLimit(.minutes(5)))
struct TrustTests {
    static func entries(_ dir: String) -> [String] { (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] }

    @Test("a runtime directory of another user's, open to others, or a link is refused before anything is made in it")
    func untrustedRuntimeDirectory() throws {
        let box = Sandbox()
        defer { box.close() }
        let theirs = box.dir + "/theirs", open = box.dir + "/open", target = box.dir + "/target", link = box.dir + "/link"
        mkdir(theirs, 0o700)
        chown(theirs, OtherUser.uid, OtherUser.uid)
        mkdir(open, 0o700)
        chmod(open, 0o775)
        mkdir(target, 0o700)
        symlink(target, link)
        let cases: [(dir: String, looked: String, what: String)] = [
            (theirs, theirs, "belongs to uid 65534"), (open, open, "mode is 0775"), (link, target, "symbolic link"),
        ]
        for c in cases {
            let env = ["ICEBOX_RUNTIME_DIR": c.dir]
            for args in [["launch", "x", "--", "sleep", "100"], ["ps"], ["daemon"]] {
                let r = try box.icebox(args, extraEnv: env)
                #expect(r.status == 77, "\(args) in \(c.dir): \(r.output)")
                #expect(r.stderr.contains("refusing to use runtime directory \(c.dir)"), "\(r.stderr)")
                #expect(r.stderr.contains(c.what), "\(r.stderr)")
                #expect(Self.entries(c.looked).isEmpty, "\(args) made \(Self.entries(c.looked)) in \(c.looked)")
            }
            // Before the fix a daemon started there: stop it (it is refused now, and harmless).
            _ = try? box.icebox(["daemon", "--stop", "--terminate-apps"], extraEnv: env, timeout: 10)
        }
    }

    @Test("a runtime or state directory of ours that others may only read is made 0700, not refused")
    func readableDirectoryTightened() throws {
        let box = Sandbox()
        defer { box.close() }
        for dir in [box.runtimeDir, box.stateDir] {
            mkdir(dir, 0o700)
            chmod(dir, 0o755)
        }
        #expect(try box.icebox(["launch", "x", "--", "sleep", "100"]).status == 0)
        for dir in [box.runtimeDir, box.stateDir] {
            #expect(try FileIO.linkStatus(dir)?.permissions == 0o700, "\(dir)")
        }
    }

    @Test(
        "without XDG_RUNTIME_DIR, a /tmp/icebox-UID made first by someone else is refused",
        .enabled(
            if: !FileManager.default.fileExists(atPath: IceboxPaths.fallbackRuntimeParent(uid: OtherUser.uid)),
            "\(IceboxPaths.fallbackRuntimeParent(uid: OtherUser.uid)) exists already"))
    func squattedFallback() throws {
        let other = try OtherUser()
        defer { other.close() }
        let squatted = IceboxPaths.fallbackRuntimeParent(uid: OtherUser.uid)
        mkdir(squatted, 0o755)  // root's, made before nobody's first icebox command
        defer { rmdir(squatted) }
        let env = ["PATH": "/usr/bin:/bin", "HOME": other.home]
        for args in [["ps"], ["launch", "x", "--", "true"]] {
            let r = try other.icebox(args, environment: env)
            #expect(r.status == 77, "\(args): \(r.stderr)")
            #expect(r.stderr.contains("refusing to use runtime directory \(squatted): it belongs to uid 0"), "\(r.stderr)")
            #expect(r.stderr.contains("ICEBOX_RUNTIME_DIR"), "\(r.stderr)")
            #expect(Self.entries(squatted).isEmpty)
        }
    }

    @Test("a symbolic link as daemon.lock is refused and its target left as it was")
    func symlinkedLockFile() throws {
        let box = Sandbox()
        defer { box.close() }
        mkdir(box.runtimeDir, 0o700)
        let victim = box.dir + "/precious"
        try "precious\n".write(toFile: victim, atomically: false, encoding: .utf8)
        symlink(victim, box.runtimeDir + "/daemon.lock")
        // Through a client (which checks before it starts a daemon) and the daemon itself
        // (which opens the lock through the directory's descriptor with O_NOFOLLOW).
        for args in [["launch", "x", "--", "sleep", "100"], ["daemon", "--foreground"]] {
            let r = try box.icebox(args, timeout: 10)
            #expect(r.status == 77, "\(args): \(r.output)")
            #expect(r.stderr.contains("daemon.lock") && r.stderr.contains("symbolic link"), "\(r.stderr)")
            #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n")
        }
        _ = try? box.icebox(["daemon", "--stop", "--terminate-apps"], timeout: 10)
    }

    @Test("a daemon of another user's gets nothing: the client checks SO_PEERCRED before it sends")
    func fakeDaemon() throws {
        let box = Sandbox()
        defer { box.close() }
        let other = try OtherUser()
        defer { other.close() }
        let runtime = other.home + "/run"
        // The fake: nobody listens where icebox looks, and reports how many bytes it got.
        let fake = other.process(
            [
                "/usr/bin/python3", "-c",
                """
                import os, socket, sys
                d = sys.argv[1]
                os.makedirs(d, mode=0o700, exist_ok=True)
                s = socket.socket(socket.AF_UNIX)
                s.bind(d + '/icebox.sock')
                s.listen(1)
                print('ready', flush=True)
                s.settimeout(20)
                c, _ = s.accept()
                c.settimeout(3)
                n = 0
                try:
                    while True:
                        b = c.recv(65536)
                        if not b:
                            break
                        n += len(b)
                        if b'\\n' in b:
                            break
                except socket.timeout:
                    pass
                print(n, flush=True)
                """, runtime,
            ], environment: ["PATH": "/usr/bin:/bin"])
        let out = Pipe()
        fake.standardOutput = out
        try fake.run()
        defer { if fake.isRunning { kill(fake.processIdentifier, SIGKILL) } }
        var said = ""
        while !said.contains("ready\n") {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            said += String(decoding: chunk, as: UTF8.self)
        }
        #expect(said.contains("ready"), "the fake daemon did not start: \(said)")
        // icebox run sends the environment and this terminal's descriptors with its request.
        let r = try box.icebox(["run", "--", "true"], extraEnv: ["ICEBOX_RUNTIME_DIR": runtime], timeout: 15)
        #expect(r.status == 77, "\(r.output)")
        #expect(r.stderr.contains("uid 65534"), "\(r.stderr)")
        said += String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        fake.waitUntilExit()
        let received = said.split(separator: "\n").last.map(String.init)
        #expect(received == "0", "the fake daemon received \(received ?? "?") bytes")
    }

    @Test("a user refused by root's daemon is told why and exits 77, for every command")
    func refusedUser() throws {
        let box = Sandbox()
        defer { box.close() }
        let other = try OtherUser()
        defer { other.close() }
        #expect(try box.icebox(["launch", "keep", "--", "sleep", "1000"]).status == 0)
        // Make root's socket reachable to nobody, as a careless setup would.
        chmod(box.dir, 0o755)
        chmod(box.runtimeDir, 0o755)
        chmod(box.runtimeDir + "/icebox.sock", 0o666)
        defer {
            chmod(box.runtimeDir, 0o700)
            chmod(box.dir, 0o700)
        }
        var env = box.environment
        env["ICEBOX_STATE_DIR"] = other.home + "/state"
        let commands = [
            ["ps"], ["ps", "-a"], ["daemon", "--stop"], ["daemon"], ["launch", "x", "--", "true"], ["suspend", "keep"],
            ["run", "--", "true"], ["policy"],
        ]
        // Several rounds: the answer used to depend on a race with the daemon's close.
        for _ in 0..<3 {
            for args in commands {
                let r = try other.icebox(args, environment: env, timeout: 15)
                #expect(r.status == 77, "\(args): \(r.status) \(r.stdout) \(r.stderr)")
                #expect(r.stderr.contains("permission denied"), "\(args): \(r.stderr)")
                #expect(r.stderr.contains("uid 0"), "\(args): \(r.stderr)")
                #expect(r.stderr.contains("ICEBOX_RUNTIME_DIR"), "\(args): \(r.stderr)")
            }
        }
        #expect(try box.apps()["keep"]?.state == .active)
    }

    @Test("a real-time signal far past RTMAX is a usage error, not a crash")
    func hugeRealtimeSignal() throws {
        let box = Sandbox()
        defer { box.close() }
        for signal in ["RTMIN+2147483647", "RTMAX-2147483647", "SIGRTMIN+2147483647"] {
            let r = try box.icebox(["launch", "--background-signal", signal, "x", "--", "true"])
            #expect(r.status == 64, "\(signal): \(r.output)")
            #expect(r.stderr.contains("unknown signal"), "\(signal): \(r.stderr)")
        }
    }

    @Test("bench --runs and --warmup near Int.max are usage errors, not a crash")
    func hugeBenchCounts() throws {
        let box = Sandbox()
        defer { box.close() }
        for (option, value) in [("--runs", "9223372036854775807"), ("--warmup", "9223372036854775807"), ("--runs", "1000001")] {
            let r = try box.icebox(["bench", "--name", "b", option, value, "--", "sleep", "100"])
            #expect(r.status == 64, "\(option) \(value): \(r.output)")
            #expect(r.stderr.contains("at most 1000000"), "\(option) \(value): \(r.stderr)")
        }
    }

    @Test("the daemon's own lock open refuses a link (O_NOFOLLOW through the directory's descriptor)")
    func lockOpenRefusesLink() throws {
        let box = Sandbox()
        defer { box.close() }
        mkdir(box.runtimeDir, 0o700)
        let victim = box.dir + "/precious"
        try "precious\n".write(toFile: victim, atomically: false, encoding: .utf8)
        symlink(victim, box.runtimeDir + "/daemon.lock")
        let paths = IceboxPaths(runtimeDir: box.runtimeDir, stateDir: box.stateDir)
        #expect(throws: IceboxError.self) { _ = try paths.openLockFile() }
        do { _ = try paths.openLockFile() } catch { #expect(error.code == .permission, "\(error)") }
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n")
        unlink(box.runtimeDir + "/daemon.lock")
        let fd = try paths.openLockFile()
        close(fd)
    }

    @Test("freeze --pid of a process the user may not signal exits 77 at once")
    func freezeOthersProcess() throws {
        let other = try OtherUser()
        defer { other.close() }
        let sleeper = Process()
        sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
        sleeper.arguments = ["100"]
        try sleeper.run()
        defer {
            kill(sleeper.processIdentifier, SIGKILL)
            sleeper.waitUntilExit()
        }
        let pid = sleeper.processIdentifier
        for command in ["freeze"] {
            let started = Date()
            let r = try other.icebox([command, "--pid", "\(pid)"], environment: ["PATH": "/usr/bin:/bin"], timeout: 20)
            #expect(r.status == 77, "\(command): \(r.status) \(r.stderr)")
            #expect(r.stderr.contains("pid \(pid)") && r.stderr.contains("not permitted"), "\(r.stderr)")
            #expect(Date().timeIntervalSince(started) < 3, "\(command) took \(Date().timeIntervalSince(started)) s")
        }
        #expect(Kernel.processState(pid) != "T")
    }
}

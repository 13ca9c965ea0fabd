import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

@testable import IceboxCLI

/// Many commands at once while the daemon is SIGKILLed (and its successor too): every one of
/// them must reach the next daemon within its deadline, never exit 69 "cannot be reached".
/// A read-only one (ps) is answered; a suspend or resume the dying daemon may have carried
/// out is not sent again, so each has its effect at most once, and ps agrees with the kernel.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct DaemonRestartRaceTests {
    /// One client of a round: its arguments, and for a suspend or resume the app and the
    /// state it asks for.
    struct Client {
        var args: [String]
        var app: String?
        var wantsFrozen = false
    }

    /// Runs every client at once (one shell, each in the background); client i leaves its
    /// exit status in rc.i and its stderr in err.i under `dir`. The shell does not wait for
    /// them: it inherits this process's blocked signals (SIGCHLD among them), and its `wait`
    /// never returned; `finished` counts the statuses written.
    func startClients(_ box: Sandbox, _ clients: [Client], in dir: String) throws -> Process {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        var script = ""
        for (i, client) in clients.enumerated() {
            let args = client.args.map { "'\($0)'" }.joined(separator: " ")
            script += "(\"$ICEBOX\" \(args) >/dev/null 2>\(dir)/err.\(i); echo $? >\(dir)/tmp.\(i); mv \(dir)/tmp.\(i) \(dir)/rc.\(i)) &\n"
            // Spread over about half a second, so that the kills (each 20-80 ms after a daemon
            // is up) meet clients still arriving: all at once, a fresh-clone run of .ci/run had
            // them all answered before the second kill of a round (kills 1 of the 2 expected).
            if i % 10 == 9 { script += "sleep 0.03\n" }
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", script]
        p.environment = box.environment.merging(["ICEBOX": Sandbox.binary]) { $1 }
        try p.run()
        return p
    }

    /// SIGKILLs the daemon holding the lock now, if it is one (not a pid reused since).
    /// Returns its pid.
    func killCurrentDaemon(_ box: Sandbox) -> pid_t? {
        guard let pid = box.daemonPID, Kernel.alive(pid),
            let cmdline = try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8), cmdline.contains("daemon"),
            let handle = try? ProcessHandle(adopting: pid)
        else { return nil }
        _ = try? handle.send(SIGKILL)
        var pfd = pollfd(fd: handle.pidfd, events: Int16(POLLIN), revents: 0)
        _ = poll(&pfd, 1, 5000)
        return pid
    }

    /// How many clients have written their exit status.
    func finished(_ dir: String) -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasPrefix("rc.") }.count
    }

    func count(_ box: Sandbox, _ app: String) -> Int {
        box.events(app).filter { [.freeze, .thaw, .resume].contains($0.kind) }.count
    }

    @Test(
        "commands racing SIGKILLs of the daemon reach the next one; suspends and resumes act at most once",
        .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"))
    func ridesOverRestarts() throws {
        let box = Sandbox()
        defer { box.close() }
        let names = (0..<12).map { "r\($0)" }
        for name in names {
            let r = try box.icebox(["launch", "--backend", "cgroup2", name, "--", "sleep", "1000"])
            try #require(r.status == 0, "\(r.output)")
        }
        let cgroups = try box.apps().mapValues { try #require($0.cgroup) }
        var failures: [String] = []
        for round in 0..<4 {
            // One suspend or resume per app (towards the state it is not in), among many ps
            // and log clients.
            var clients: [Client] = []
            for name in names {
                let frozen = Kernel.cgroupFrozen(try #require(cgroups[name]))
                clients.append(
                    Client(args: frozen ? ["resume", name] : ["suspend", "--grace", "0", name], app: name, wantsFrozen: !frozen))
            }
            for i in 0..<138 { clients.append(Client(args: i % 6 == 5 ? ["log", "-n", "1"] : ["ps"])) }
            clients.shuffle()
            let before = Dictionary(uniqueKeysWithValues: names.map { ($0, count(box, $0)) })
            let dir = box.dir + "/round\(round)"
            let shell = try startClients(box, clients, in: dir)
            defer { shell.waitUntilExit() }
            // Killed up to five times a round, 20-80 ms after each daemon is up, while the
            // clients arrive: the running daemon, then each one the clients started.
            var killed: pid_t?
            var kills = 0
            for _ in 0..<5 where finished(dir) < clients.count {
                guard Scenario.eventually(seconds: 5, { box.daemonPID.map { $0 != killed && Kernel.alive($0) } ?? false }) else { break }
                usleep(UInt32.random(in: 20_000...80_000))
                if let pid = killCurrentDaemon(box) {
                    killed = pid
                    kills += 1
                }
            }
            #expect(kills >= 2, "round \(round): the daemon was killed only \(kills) times while the clients ran")
            let all = Scenario.eventually(seconds: 40) { finished(dir) == clients.count }
            #expect(all, "round \(round): \(clients.count - finished(dir)) clients did not finish")
            // The next daemon (ps starts it) has adopted every app: the record and the kernel agree.
            let after = try box.apps()
            for (i, client) in clients.enumerated() {
                let rc = Int32(((try? String(contentsOfFile: "\(dir)/rc.\(i)", encoding: .utf8)) ?? "").trimmed()) ?? -1
                let err = (try? String(contentsOfFile: "\(dir)/err.\(i)", encoding: .utf8)) ?? ""
                let what = "round \(round): icebox \(client.args.joined(separator: " ")) exited \(rc): \(err)"
                // A suspend or resume the dying daemon may have carried out fails, saying so.
                let saysSo = client.app != nil && rc == ExitCode.failure.rawValue && err.contains("may or may not have been done")
                if rc != 0 && !saysSo { failures.append(what) }
                guard let app = client.app, let cgroup = cgroups[app] else { continue }
                let frozen = Kernel.cgroupFrozen(cgroup)
                if rc == 0 && frozen != client.wantsFrozen { failures.append("\(what), yet the cgroup is frozen: \(frozen)") }
                if (after[app]?.state == .suspended) != frozen {
                    failures.append(
                        "round \(round): ps says \(app) is \(after[app]?.state.rawValue ?? "gone"), the kernel frozen: \(frozen)")
                }
                let acted = count(box, app) - (before[app] ?? 0)
                if acted > 1 { failures.append("\(what), and \(app) was frozen or thawed \(acted) times") }
            }
        }
        #expect(failures.isEmpty, "\(failures.count) failures:\n\(failures.prefix(20).joined(separator: "\n"))")
    }

    /// A daemon that reads the request on its first connection and dies (closes everything,
    /// its socket file left, as SIGKILL leaves it), standing in for the real one at the
    /// moment no test can time: between its read and its answer. Further connections on the
    /// same listener are answered `done` (what the next daemon would say to `ps`). Returns
    /// what `icebox ARGS` printed and its status, and how many connections came.
    func daemonDyingAfterRead(_ box: Sandbox, _ args: [String]) throws -> (Sandbox.Result, Int) {
        for dir in [box.dir, box.runtimeDir, box.stateDir] where !FileManager.default.fileExists(atPath: dir) {
            try #require(mkdir(dir, 0o700) == 0, "mkdir \(dir)")
        }
        let listener = try UnixSocket.listen(path: box.runtimeDir + "/icebox.sock")
        defer { close(listener) }
        let command = Sandbox.Background(box, args)
        /// Accepts the next connection (within 10 s) and reads its request line.
        func acceptAndRead() -> Int32? {
            var pfd = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 10_000) == 1, let fd = UnixSocket.accept(listener) else { return nil }
            var line: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while !line.contains(10) {
                var cfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&cfd, 1, 10_000) == 1 else { break }
                let n = read(fd, &chunk, chunk.count)
                if n <= 0 { break }
                line += chunk[0..<n]
            }
            return fd
        }
        var connections = 0
        if let first = acceptAndRead() {
            connections += 1
            close(first)  // read whole, then gone: the client sees an end of file, not a reset
        }
        // A resend arrives within the second; none must come for a request that changes something.
        var pfd = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        if poll(&pfd, 1, 1_000) == 1, let again = acceptAndRead() {
            connections += 1
            _ = #"{"code":0,"kind":"done"}\#n"#.withCString { write(again, $0, strlen($0)) }
            close(again)
        }
        return (try #require(command.result(within: 60)), connections)
    }

    @Test("a suspend the dying daemon read is not sent again, and the client says it may or may not have been done")
    func noResendOfReadSuspend() throws {
        let box = Sandbox()
        defer { box.close() }
        let (result, connections) = try daemonDyingAfterRead(box, ["suspend", "--grace", "0", "someapp"])
        #expect(connections == 1, "the suspend was sent \(connections) times")
        #expect(result.status == ExitCode.failure.rawValue, "\(result.output)")
        #expect(result.stderr.contains("may or may not have been done"), "\(result.stderr)")
    }

    @Test("ps, whose daemon died after reading it and before answering, is asked again and answered")
    func resendsReadOnlyRequest() throws {
        let box = Sandbox()
        defer { box.close() }
        let (result, connections) = try daemonDyingAfterRead(box, ["ps"])
        #expect(connections == 2, "ps was sent \(connections) times")
        #expect(result.status == 0, "\(result.output)")
    }

    @Test("icebox run whose daemon is killed says its app is left running, detached, and the next daemon adopts it")
    func runLosesItsDaemon() throws {
        let box = Sandbox()
        defer { box.close() }
        // Its output to files: the app holds the same descriptors, so pipes would not end.
        let err = box.dir + "/run.err"
        _ = FileManager.default.createFile(atPath: err, contents: nil)
        let run = Process()
        run.executableURL = URL(fileURLWithPath: Sandbox.binary)
        run.arguments = ["run", "--name", "attached", "--", "sleep", "1000"]
        run.environment = box.environment
        run.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        run.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        run.standardError = FileHandle(forWritingAtPath: err)
        try run.run()
        defer {
            if run.isRunning { kill(run.processIdentifier, SIGKILL) }
            run.waitUntilExit()
        }
        let up = Scenario.eventually { (try? box.apps()["attached"]?.state) == .active }
        try #require(up, "the attached app did not start")
        let pid = try #require(try box.apps()["attached"]?.pid)
        try box.killDaemon()
        let ended = Scenario.eventually { !run.isRunning }
        try #require(ended, "icebox run did not end when its daemon was killed")
        let stderr = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        #expect(run.terminationStatus == ExitCode.failure.rawValue, "\(stderr)")
        #expect(stderr.contains("attached is left running"), "\(stderr)")
        #expect(Kernel.alive(pid))
        #expect(try box.apps()["attached"]?.state == .active, "the next daemon should have adopted it")
    }

    @Test("log -f follows the event log across a daemon restart")
    func logFollowsAcrossRestart() throws {
        let box = Sandbox()
        defer { box.close() }
        _ = try box.icebox(["launch", "before", "--", "sleep", "1000"])
        let out = box.dir + "/follow.out"
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        let follow = Process()
        follow.executableURL = URL(fileURLWithPath: Sandbox.binary)
        follow.arguments = ["log", "-f", "-n", "0"]
        follow.environment = box.environment
        follow.standardOutput = FileHandle(forWritingAtPath: out)
        try follow.run()
        defer {
            kill(follow.processIdentifier, SIGKILL)
            follow.waitUntilExit()
        }
        try box.killDaemon()
        let launched = try box.icebox(["launch", "after", "--", "sleep", "1000"])  // starts the next daemon
        #expect(launched.status == 0, "\(launched.output)")
        let seen = Scenario.eventually {
            ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").contains("after")
        }
        #expect(seen, "log -f printed: \((try? String(contentsOfFile: out, encoding: .utf8)) ?? "")")
    }

    /// The client waits for a starting daemon rather than start another only if it sees the
    /// lock's holder: /proc/locks must name it for the lock file as stat(2) names the file.
    @Test("the lock's holder is found in /proc/locks, and none once it lets go")
    func lockHolderFromProcLocks() throws {
        let box = Sandbox()
        defer { box.close() }
        try #require(mkdir(box.runtimeDir, 0o700) == 0 || errno == EEXIST)
        let path = box.runtimeDir + "/daemon.lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        try #require(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
        #expect(ClientSession.lockHolder(path) == getpid())
        close(fd)
        #expect(ClientSession.lockHolder(path) == nil)
    }
}

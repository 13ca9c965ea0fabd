import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

enum TopTestError: Error { case tmux(String) }

/// Where tmux is, if this host has it.
enum TmuxHost {
    static let path: String? = ["/usr/bin/tmux", "/bin/tmux", "/usr/local/bin/tmux"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
}

/// `icebox top` on a real terminal: tmux runs it in a detached session of a fixed size, the
/// test sends keys and reads the screen back (capture-pane), and checks the app's state
/// from the kernel after each key.
@Suite(
    .enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"),
    .enabled(if: TmuxHost.path != nil, "tmux is not installed (scripts/test installs it)"), .timeLimit(.minutes(5)))
struct TopTests {
    /// A tmux server of the test's own (its own socket), with one session running a shell.
    struct Tmux {
        let socket: String
        let box: Sandbox

        /// Runs tmux with its output to a file, not a pipe (the server `new-session` starts
        /// inherits the client's descriptors and keeps them: a pipe would never end), spawned
        /// with no signal blocked (Foundation's Process hands its children blocked signals,
        /// and the tmux client then never hears that its server is ready).
        @discardableResult
        func run(_ args: [String]) throws -> Sandbox.Result {
            let path = box.dir + "/tmux-\(UInt32.random(in: 0...UInt32.max)).out"
            let out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard out >= 0 else { throw TopTestError.tmux("cannot create \(path)") }
            defer { try? FileManager.default.removeItem(atPath: path) }
            let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
            defer { close(null) }
            var request = SpawnRequest(
                executable: TmuxHost.path!, arguments: ["tmux", "-L", socket, "-f", "/dev/null"] + args,
                environment: box.environment.map { "\($0.key)=\($0.value)" })
            request.stdin = null
            request.stdout = out
            request.stderr = out
            let spawned = try Spawner.spawn(request)
            close(out)
            guard let ended = try spawned.handle.wait(until: Clock.monotonicNanos() + 10_000_000_000) else {
                _ = try? spawned.handle.send(SIGKILL)
                _ = try? spawned.handle.wait(until: Clock.monotonicNanos() + 1_000_000_000)
                throw TopTestError.tmux("tmux \(args.joined(separator: " ")) did not end in 10 s")
            }
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            return Sandbox.Result(status: ended.shellStatus, stdout: text, stderr: "")
        }

        /// A session of 120×40 running bash (without start-up files) with a known prompt, the sandbox's
        /// variables in its environment.
        func start() throws {
            var args = ["new-session", "-d", "-s", "top", "-x", "120", "-y", "40"]
            for (key, value) in box.environment where key.hasPrefix("ICEBOX_") { args += ["-e", "\(key)=\(value)"] }
            args += ["-e", "PS1=top-test$ ", "-e", "TERM=xterm-256color", "/bin/bash", "--norc", "--noprofile"]
            let r = try run(args)
            #expect(r.status == 0, "\(r.output)")
        }

        func screen() -> String { (try? run(["capture-pane", "-p", "-t", "top"]).stdout) ?? "" }

        func alternateOn() -> String {
            ((try? run(["display", "-p", "-t", "top", "#{alternate_on}"]).stdout) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        }

        func keys(_ keys: String...) throws { try run(["send-keys", "-t", "top"] + keys) }

        func kill() { _ = try? run(["kill-server"]) }
    }

    /// Checks `condition` every 20 ms until it holds or `seconds` pass: tmux tells nothing
    /// when its screen changes.
    static func eventually(_ seconds: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            usleep(20_000)
        }
        return try condition()
    }

    /// The table row of `name`: its line on the screen.
    static func row(_ screen: String, _ name: String) -> String? {
        screen.split(separator: "\n").first { $0.dropFirst(2).hasPrefix(name + " ") }.map(String.init)
    }

    @Test(
        "top in tmux shows a launched app, s freezes it (kernel), r thaws it, q gives the terminal back",
        .enabled(if: Sandbox.cgroupMissing == nil, "\(Sandbox.cgroupMissing ?? "")"))
    func suspendAndResumeByKeys() throws {
        let box = Sandbox("topkeys")
        defer { box.close() }
        let tmux = Tmux(socket: "icebox-top-\(getpid())-\(UInt32.random(in: 0...UInt32.max))", box: box)
        defer { tmux.kill() }
        try tmux.start()
        #expect(Self.eventually { tmux.screen().contains("top-test$") })
        try tmux.keys("\(Sandbox.binary) top 2>\(box.dir)/top.err; echo top-exit=$?", "Enter")
        // The table's title on the alternate screen (the typed command line also says "icebox top").
        #expect(Self.eventually { tmux.alternateOn() == "1" && tmux.screen().contains("1NAME") }, "\(tmux.screen())")

        // No notice handler and no grace: s freezes it at once.
        let launched = try box.icebox(["launch", "--grace", "0", "web", "--", "sleep", "1000"])
        #expect(launched.status == 0, "\(launched.output)")
        let record = try #require(try box.apps()["web"])
        let cgroup = try #require(Kernel.appCgroup(record))
        #expect(Self.eventually { Self.row(tmux.screen(), "web")?.contains("active") == true }, "\(tmux.screen())")
        // The only app, so it is selected.
        #expect(Self.row(tmux.screen(), "web")?.hasPrefix("> ") == true, "\(tmux.screen())")

        try tmux.keys("s")
        #expect(Self.eventually { Kernel.frozen(cgroup) }, "cgroup.events of \(cgroup) never said frozen 1")
        #expect(Self.eventually { Self.row(tmux.screen(), "web")?.contains("suspended") == true }, "\(tmux.screen())")
        // The freeze time from the event's duration, in the FREEZE column (µs or ms).
        #expect(
            Self.eventually { Self.row(tmux.screen(), "web").map { $0.contains(" µs ") || $0.contains(" ms ") } ?? false },
            "\(tmux.screen())")
        // The policy, asked for once a daemon answered.
        #expect(Self.eventually { tmux.screen().contains("max suspended") }, "\(tmux.screen())")

        try tmux.keys("r")
        #expect(Self.eventually { !Kernel.frozen(cgroup) }, "cgroup.events of \(cgroup) still says frozen 1")
        #expect(Kernel.processState(record.pid) != "T")
        #expect(Self.eventually { Self.row(tmux.screen(), "web")?.contains("active") == true }, "\(tmux.screen())")

        // t asks first; n leaves it running.
        try tmux.keys("t")
        #expect(Self.eventually { tmux.screen().contains("terminate web? (y/n)") }, "\(tmux.screen())")
        try tmux.keys("n")
        #expect(Self.eventually { tmux.screen().contains("terminate web: not done") }, "\(tmux.screen())")
        #expect(kill(record.pid, 0) == 0)

        try tmux.keys("q")
        #expect(Self.eventually { tmux.screen().contains("top-exit=0") }, "\(tmux.screen())")
        #expect(tmux.alternateOn() == "0")
        let screen = tmux.screen()
        #expect(screen.contains("top-test$"), "\(screen)")
        #expect(!screen.contains("NAME"), "the table is still on the normal screen: \(screen)")
    }

    @Test(
        "the MEMORY column follows the app's cgroup as it grows, read by top itself (no new listing)",
        .enabled(if: Sandbox.cgroupMemoryCounterMissing == nil, "\(Sandbox.cgroupMemoryCounterMissing ?? "")"))
    func memoryFromCgroup() throws {
        let box = Sandbox("topmem")
        defer { box.close() }
        let tmux = Tmux(socket: "icebox-top-\(getpid())-\(UInt32.random(in: 0...UInt32.max))", box: box)
        defer { tmux.kill() }
        _ = try Self.startTop(tmux)
        // Waits for its flag file, then takes 48 MiB and holds it.
        let flag = box.dir + "/grow"
        let script = box.dir + "/grow.py"
        try """
        import os, time
        while not os.path.exists(\(String(reflecting: flag))): time.sleep(0.05)
        block = bytearray(48 << 20)
        for i in range(0, len(block), 4096): block[i] = 1
        time.sleep(1000)
        """.write(toFile: script, atomically: true, encoding: .utf8)
        let launched = try box.icebox(["launch", "grow", "--", "python3", script])
        #expect(launched.status == 0, "\(launched.output)")
        let record = try #require(try box.apps()["grow"])
        #expect(Self.eventually { Self.row(tmux.screen(), "grow") != nil }, "\(tmux.screen())")
        let eventsBefore = box.events("grow").count
        #expect(FileManager.default.createFile(atPath: flag, contents: nil))
        func kernelBytes() -> Double {
            let path = record.memoryV1.map { $0 + "/memory.usage_in_bytes" } ?? (record.cgroup ?? "") + "/memory.current"
            return Double(((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        }
        func shownMiB() -> Double? {
            guard let row = Self.row(tmux.screen(), "grow"), let range = row.range(of: #"[0-9.]+ MiB"#, options: .regularExpression) else {
                return nil
            }
            return Double(row[range].dropLast(4))
        }
        #expect(Self.eventually(15) { (shownMiB() ?? 0) >= 48 }, "\(tmux.screen())")
        let shown = try #require(shownMiB())
        let kernel = kernelBytes() / 1_048_576
        #expect(abs(shown - kernel) < max(4, kernel / 10), "top shows \(shown) MiB, the cgroup says \(kernel) MiB")
        // No event of grow since the flag (top lists the apps again only for an event naming
        // an app it does not know): the figure came from the cgroup.
        #expect(box.events("grow").count == eventsBefore)
    }

    /// A tmux session with `icebox top` running in the foreground of its shell (env: what
    /// goes before the command), and top's pid: the shell's child (a background job would be
    /// stopped by SIGTTOU when it sets the terminal's mode).
    static func startTop(_ tmux: Tmux, env: String = "") throws -> pid_t {
        try tmux.start()
        #expect(Self.eventually { tmux.screen().contains("top-test$") })
        try tmux.keys("\(env)\(Sandbox.binary) top; echo top-exit=$?", "Enter")
        #expect(Self.eventually { tmux.alternateOn() == "1" && tmux.screen().contains("1NAME") }, "\(tmux.screen())")
        let shell = try #require(
            pid_t(try tmux.run(["display", "-p", "-t", "top", "#{pane_pid}"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        return try #require(Kernel.children(of: shell).first)
    }

    @Test(
        "without inotify (the user's instances used up) top still follows the events: a launched app appears, then frozen",
        .enabled(if: Sandbox.withoutInotifyRefusal == nil, "\(Sandbox.withoutInotifyRefusal ?? "")"))
    func followsWithoutInotify() throws {
        let box = Sandbox("topnoinotify")
        defer { box.close() }
        let tmux = Tmux(socket: "icebox-top-\(getpid())-\(UInt32.random(in: 0...UInt32.max))", box: box)
        defer { tmux.kill() }
        let quoted = ([HostLayoutWorld.unshare] + Sandbox.withoutInotify).map {
            "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'"
        }
        _ = try Self.startTop(tmux, env: quoted.joined(separator: " ") + " ")
        #expect(try box.icebox(["launch", "--grace", "0", "web", "--", "sleep", "1000"]).status == 0)
        #expect(Self.eventually { Self.row(tmux.screen(), "web")?.contains("active") == true }, "\(tmux.screen())")
        #expect(try box.icebox(["suspend", "web"]).status == 0)
        #expect(Self.eventually { Self.row(tmux.screen(), "web")?.contains("suspended") == true }, "\(tmux.screen())")
        try tmux.keys("q")
        #expect(Self.eventually { tmux.screen().contains("top-exit=0") }, "\(tmux.screen())")
    }

    @Test(
        "top exits 128+N on SIGTERM, SIGHUP and SIGINT, and on a crash (SIGSEGV), with the terminal restored",
        arguments: [SIGTERM, SIGHUP, SIGINT, SIGSEGV])
    func signalsRestore(signal: Int32) throws {
        let box = Sandbox("topsig\(signal)")
        defer { box.close() }
        let tmux = Tmux(socket: "icebox-top-\(getpid())-\(UInt32.random(in: 0...UInt32.max))", box: box)
        defer { tmux.kill() }
        // A crash goes on to the runtime's backtracer, which would wait for keys on a terminal.
        let pid = try Self.startTop(tmux, env: signal == SIGSEGV ? "SWIFT_BACKTRACE=enable=no " : "")
        #expect(kill(pid, signal) == 0)
        #expect(Self.eventually { tmux.screen().contains("top-exit=\(128 + signal)") }, "\(tmux.screen())")
        #expect(tmux.alternateOn() == "0")
        // Raw mode undone: the shell echoes what is typed again.
        try tmux.keys("echo echoed-$((6*7))", "Enter")
        #expect(Self.eventually { tmux.screen().contains("echoed-42") }, "\(tmux.screen())")
    }

    @Test("top redraws at the new size when the terminal is resized (SIGWINCH); Ctrl-C leaves with 130")
    func resize() throws {
        let box = Sandbox("topwinch")
        defer { box.close() }
        let tmux = Tmux(socket: "icebox-top-\(getpid())-\(UInt32.random(in: 0...UInt32.max))", box: box)
        defer { tmux.kill() }
        _ = try Self.startTop(tmux)
        func lines() -> [Substring] { tmux.screen().split(separator: "\n", omittingEmptySubsequences: false) }
        // The bottom line (no daemon runs: it says so) on the last of 40 rows, then of 20.
        let bottom = "cannot list the apps: no icebox daemon is running yet"
        #expect(Self.eventually { lines().count >= 40 && lines()[39].hasPrefix(bottom) }, "\(tmux.screen())")
        try tmux.run(["resize-window", "-t", "top", "-x", "70", "-y", "20"])
        #expect(Self.eventually { lines().count >= 20 && lines()[19].hasPrefix(bottom) }, "\(tmux.screen())")
        #expect(lines().allSatisfy { $0.count <= 70 })
        // Ctrl-C is a key in raw mode: top leaves as after SIGINT.
        try tmux.keys("C-c")
        #expect(Self.eventually { tmux.screen().contains("top-exit=130") }, "\(tmux.screen())")
        #expect(tmux.alternateOn() == "0")
    }

    @Test("icebox top </dev/null >file exits 64 and says to use ps and log -f; the file stays empty")
    func notATerminal() throws {
        let box = Sandbox("topnotty")
        defer { box.close() }
        let file = box.dir + "/top.out"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", "exec \"$0\" top </dev/null >\"$1\"", Sandbox.binary, file]
        p.environment = box.environment
        let r = try Sandbox.runToEnd(p, timeout: 30, what: "icebox top </dev/null >file")
        #expect(r.status == 64, "\(r.output)")
        #expect((try? String(contentsOfFile: file, encoding: .utf8)) == "")
        #expect(r.stderr.contains("stdout is not a terminal"), "\(r.stderr)")
        #expect(r.stderr.contains("icebox ps") && r.stderr.contains("icebox log -f"), "\(r.stderr)")
    }
}

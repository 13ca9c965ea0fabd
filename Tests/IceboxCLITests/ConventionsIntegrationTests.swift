import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// The command-line conventions on the real binary: suggestions, operands, ps filters and
/// templates, log bounds, exit codes on signals, job control, colour and doctor.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct ConventionsIntegrationTests {
    /// Waits (at most `seconds`) until the condition holds; returns whether it did.
    @discardableResult
    func eventually(_ seconds: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
        try Scenario.eventually(seconds: seconds, condition)
    }

    /// Whether a following `log -f` is in its wait: it has its inotify descriptor (made after
    /// its signalfd). Its signal mask alone says nothing: Foundation's Process starts children
    /// with signals blocked, and icebox clears the mask first thing.
    func following(_ pid: pid_t) -> Bool {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        return fds.contains {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")) == "anon_inode:inotify"
        }
    }

    func start(_ box: Sandbox, _ args: [String], stderr: Pipe? = nil) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Sandbox.binary)
        p.arguments = args
        p.environment = box.environment
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        p.standardError = stderr ?? FileHandle.nullDevice
        try p.run()
        return p
    }

    func stop(_ p: Process) {
        if p.isRunning {
            kill(p.processIdentifier, SIGCONT)
            kill(p.processIdentifier, SIGKILL)
        }
        p.waitUntilExit()
    }

    @Test("mistyped commands and options get a suggestion and exit 64; extra operands are named")
    func didYouMean() throws {
        let box = Sandbox()
        defer { box.close() }
        let cases: [([String], String)] = [
            (["suspnd", "web"], "unknown command 'suspnd'; did you mean 'suspend'?"),
            (["--versoin"], "did you mean '--version'?"),
            (["ps", "--al"], "unknown option --al for 'ps'; did you mean '--all'?"),
            (["log", "--folow"], "did you mean '--follow'?"),
            (["doctor", "extra"], "unexpected argument 'extra': 'doctor' takes no arguments"),
            (["log", "a", "b"], "unexpected argument 'b'"),
            (["freeze", "--pid", "1234", "now"], "unexpected argument 'now'"),
        ]
        for (args, message) in cases {
            let r = try box.icebox(args)
            #expect(r.status == 64, "\(args): \(r.output)")
            #expect(r.stderr.contains(message), "\(args): \(r.stderr)")
        }
        #expect(try box.icebox(["-V"]).stdout.hasPrefix("icebox "))
    }

    @Test("ps NAME filters, -q prints names, --format fills a template; a NAME that matches nothing exits 1")
    func psFiltersAndFormats() throws {
        let box = Sandbox()
        defer { box.close() }
        #expect(try box.icebox(["launch", "web", "--", "sleep", "1000"]).status == 0)
        #expect(try box.icebox(["launch", "worker", "--", "sleep", "1000"]).status == 0)
        #expect(try box.icebox(["launch", "db", "--", "sleep", "1000"]).status == 0)
        #expect(try box.icebox(["suspend", "--grace", "0", "db"]).status == 0)

        let table = try box.icebox(["ps"])
        let header = try #require(table.stdout.split(separator: "\n").first)
        #expect(header.split(separator: " ", omittingEmptySubsequences: true).count == 9, "one token per column: \(header)")
        #expect(header.contains("LAST_FREEZE") && header.contains("LAST_THAW"))
        #expect(!table.stdout.contains("\u{1B}["), "no colour into a pipe")

        let one = try box.icebox(["ps", "web"])
        #expect(one.status == 0)
        #expect(one.stdout.split(separator: "\n").map { $0.split(separator: " ").first ?? "" } == ["NAME", "web"])

        let names = try box.icebox(["ps", "-q"])
        #expect(Set(names.stdout.split(separator: "\n")) == ["web", "worker", "db"])
        #expect(try box.icebox(["ps", "-q", "w*"]).stdout.split(separator: "\n").sorted() == ["web", "worker"])

        let formatted = try box.icebox(["ps", "--format", "{{.Name}}\\t{{.State}}", "db", "web"])
        #expect(Set(formatted.stdout.split(separator: "\n")) == ["db\tsuspended", "web\tactive"], "\(formatted.stdout)")
        let tabled = try box.icebox(["ps", "--format", "table {{.Name}}\\t{{.LastFreeze}}", "db"])
        let lines = tabled.stdout.split(separator: "\n")
        #expect(lines.first == "NAME  LAST_FREEZE")
        #expect(lines.count == 2 && lines[1].hasPrefix("db    ") && lines[1].hasSuffix("s"), "\(tabled.stdout)")

        let missing = try box.icebox(["ps", "web", "nosuch"])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("no app named 'nosuch'"))
        #expect(missing.stdout.contains("web"))
        #expect(try box.icebox(["ps", "-q", "-j"]).status == 64)
        #expect(try box.icebox(["ps", "--format", "{{.Nmae}}"]).stderr.contains("did you mean '{{.Name}}'"))

        // A named app is shown after it ended, without --all.
        #expect(try box.icebox(["evict", "worker"]).status == 0)
        #expect(try box.icebox(["ps", "-q"]).stdout.split(separator: "\n").sorted() == ["db", "web"])
        #expect(try box.icebox(["ps", "--format", "{{.State}}", "worker"]).stdout == "evicted\n")
    }

    @Test("log -n, --since and --until pick events; old events carry their date; log NAME for an unknown app exits 1")
    func logSelection() throws {
        let box = Sandbox()
        defer { box.close() }
        // A log with an event from 2020 and the events of a real app.
        try FileManager.default.createDirectory(atPath: box.stateDir, withIntermediateDirectories: true)
        var old = Event(app: "ancient", pid: 7, kind: .exit, from: .active, to: .exited, detail: "long ago", at: .read())
        old.time = "2020-01-02T03:04:05.000006Z"
        try (JSONLines.encode(old) + "\n").write(toFile: box.stateDir + "/events.jsonl", atomically: false, encoding: .utf8)
        #expect(try box.icebox(["launch", "web", "--", "sleep", "1000"]).status == 0)
        #expect(try box.icebox(["evict", "web"]).status == 0)

        let all = try box.icebox(["log"])
        #expect(all.status == 0)
        let oldLine = try #require(all.stdout.split(separator: "\n").first { $0.contains("ancient") })
        #expect(oldLine.hasPrefix("2020-01-0"), "a date in front of an event not from today: \(oldLine)")
        let todayLine = try #require(all.stdout.split(separator: "\n").first { $0.contains("web") })
        #expect(todayLine.first?.isNumber == true && todayLine.dropFirst(2).first == ":", "no date for today: \(todayLine)")

        let last = try box.icebox(["log", "-n", "1", "web"])
        #expect(last.stdout.split(separator: "\n").count == 1)
        #expect(last.stdout.contains("evict"), "\(last.stdout)")
        #expect(try box.icebox(["log", "--tail", "2", "-j"]).stdout.split(separator: "\n").count == 2)

        let recent = try box.icebox(["log", "--since", "1h"])
        #expect(recent.stdout.contains("web") && !recent.stdout.contains("ancient"))
        let before = try box.icebox(["log", "--until", "2021-01-01"])
        #expect(before.stdout.contains("ancient") && !before.stdout.contains("web"))
        let future = try box.icebox(["log", "--since", "2099-01-01T00:00:00Z", "web"])
        #expect(future.status == 0 && future.stdout.isEmpty, "the app exists, nothing matched: \(future.output)")

        let unknown = try box.icebox(["log", "nosuch"])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("no app named 'nosuch'"))
        #expect(try box.icebox(["log", "--since", "tomorrowish"]).status == 64)
        #expect(try box.icebox(["log", "-f", "--until", "1m"]).status == 64)
    }

    @Test("log -f and logs -f exit 130 on SIGINT and 143 on SIGTERM")
    func followExitCodes() throws {
        let box = Sandbox()
        defer { box.close() }
        #expect(try box.icebox(["launch", "talker", "--", "sh", "-c", "echo hi; exec sleep 1000"]).status == 0)
        for (args, signal) in [(["log", "-f"], SIGINT), (["log", "-f"], SIGTERM), (["logs", "-f", "talker"], SIGINT)] {
            let p = try start(box, args)
            defer { stop(p) }
            #expect(eventually { following(p.processIdentifier) }, "\(args) never got to its follow loop")
            kill(p.processIdentifier, signal)
            p.waitUntilExit()
            #expect(p.terminationReason == .exit && p.terminationStatus == 128 + signal, "\(args) \(signal)")
        }
    }

    @Test(
        "Ctrl-Z on icebox run suspends the app and stops the client; SIGCONT resumes the app",
        .enabled(if: Sandbox.cgroupMissing == nil, "\(Sandbox.cgroupMissing ?? "")"))
    func jobControl() throws {
        let box = Sandbox()
        defer { box.close() }
        let p = try start(box, ["run", "--grace", "0", "--name", "jc", "--", "sleep", "1000"])
        defer { stop(p) }
        let pid = p.processIdentifier
        #expect(try eventually { try box.apps()["jc"]?.state == .active })
        kill(pid, SIGTSTP)
        #expect(try eventually { try box.apps()["jc"]?.state == .suspended }, "the app was not suspended")
        #expect(eventually { Kernel.processState(pid) == "T" }, "icebox run did not stop itself")
        let app = try #require(try box.apps()["jc"])
        #expect(Kernel.appFrozen(app), "the kernel says the app is frozen")
        kill(pid, SIGCONT)
        #expect(try eventually { try box.apps()["jc"]?.state == .active }, "the app was not resumed")
        #expect(Kernel.processState(pid) != "T")
        #expect(!Kernel.appFrozen(app))
        // Ctrl-C still works afterwards, and run still exits with the app's status.
        kill(pid, SIGTERM)
        p.waitUntilExit()
        #expect(p.terminationStatus == 128 + SIGTERM)
        #expect(try box.apps()["jc"]?.state == .terminated)
    }

    @Test("bench exits 130 on Ctrl-C and evicts its app")
    func benchInterrupted() throws {
        let box = Sandbox()
        defer { box.close() }
        let err = Pipe()
        let p = try start(
            box, ["bench", "--grace", "0", "--name", "bint", "--runs", "3", "--warmup", "0", "--hold", "30s", "--", "sleep", "1000"],
            stderr: err)
        defer { stop(p) }
        #expect(try eventually(20) { try box.apps()["bint"]?.state == .suspended })
        kill(p.processIdentifier, SIGINT)
        p.waitUntilExit()
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(p.terminationStatus == 130, "\(text)")
        #expect(text.contains("interrupted by SIGINT"))
        // Evicted, and its record dropped as after any benchmark.
        #expect(try box.apps()["bint"] == nil)
        #expect(box.events("bint").contains { $0.kind == .evict })
    }

    @Test("colour on a terminal only: not into pipes, not with NO_COLOR or --color never; --color always forces it")
    func colour() throws {
        let box = Sandbox()
        defer { box.close() }
        #expect(try box.icebox(["launch", "web", "--", "sleep", "1000"]).status == 0)
        let escape = "\u{1B}["
        #expect(!(try box.icebox(["ps"]).stdout.contains(escape)))
        #expect(!(try box.icebox(["log"]).stdout.contains(escape)))
        #expect(try box.icebox(["--color", "always", "ps"]).stdout.contains("\u{1B}[32mactive"))
        #expect(try box.icebox(["ps", "--color=always"], extraEnv: ["NO_COLOR": "1"]).stdout.contains(escape), "the flag beats NO_COLOR")
        #expect(try box.icebox(["log", "--color", "always"]).stdout.contains(escape))
        #expect(try box.icebox(["--color", "always", "nosuch"]).stderr.contains(escape))
    }

    @Test(
        "colour on a real terminal (script(1) gives the command a pty): not with NO_COLOR, --color never or into a pipe",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs script(1) at /usr/bin/script for a pty"))
    func colourOnATerminal() throws {
        let box = Sandbox()
        defer { box.close() }
        #expect(try box.icebox(["launch", "web", "--", "sleep", "1000"]).status == 0)
        let escape = "\u{1B}["
        func onTerminal(_ command: String, _ env: [String: String] = [:]) throws -> String {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/script")
            p.arguments = ["-qec", command, "/dev/null"]
            var environment = box.environment.merging(env) { $1 }
            environment["TERM"] = "xterm"
            if env["NO_COLOR"] == nil { environment.removeValue(forKey: "NO_COLOR") }
            p.environment = environment
            let out = Pipe()
            p.standardOutput = out
            p.standardInput = FileHandle.nullDevice
            try p.run()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            return text
        }
        let ps = Sandbox.binary + " ps"
        #expect(try onTerminal(ps).contains("\u{1B}[32mactive"), "colour on a terminal")
        #expect(!(try onTerminal(ps, ["NO_COLOR": "1"]).contains(escape)), "NO_COLOR turns it off")
        #expect(!(try onTerminal(ps + " --color never").contains(escape)))
        #expect(!(try onTerminal(ps + " | cat").contains(escape)), "a pipe on a terminal gets none")
    }

    @Test(
        "doctor exits 0 on a usable host and 1 when a required feature is missing, and changes nothing",
        .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"))
    func doctor() throws {
        let box = Sandbox()
        defer { box.close() }
        let fresh = "icebox-doctor-" + String(box.dir.split(separator: "-").last!)
        let root = try #require(Sandbox.mounts.unified) + "/" + fresh
        let freezer = Sandbox.mounts.freezerV1.map { $0 + "/" + fresh }
        defer { rmdir(root); if let freezer { rmdir(freezer) } }
        #expect(!FileManager.default.fileExists(atPath: root))

        let ok = try box.icebox(["doctor", "--cgroup-root", root, "--require", "pidfd,signal"])
        #expect(ok.status == 0, "\(ok.output)")
        #expect(ok.stdout.contains("does not exist yet"))
        #expect(!FileManager.default.fileExists(atPath: root), "doctor created the cgroup root")
        if let freezer { #expect(!FileManager.default.fileExists(atPath: freezer), "doctor created the v1 freezer directory") }
        #expect(!FileManager.default.fileExists(atPath: box.stateDir), "doctor created the state directory")

        // A root that exists is left as it was: nothing made inside it, nothing left behind.
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: false)
        let before = try FileManager.default.contentsOfDirectory(atPath: root).sorted()
        let json = try box.icebox(["doctor", "-j", "--cgroup-root", root])
        #expect(json.status == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root).sorted() == before)
        struct Report: Decodable { var ok: Bool; var usable: Bool; var missing: [String] }
        let report = try JSONDecoder().decode(Report.self, from: Data(json.stdout.utf8))
        #expect(report.ok && report.usable && report.missing.isEmpty)

        let notCgroup = try box.icebox(["doctor", "--require", "cgroup2", "--cgroup-root", box.dir + "/not-a-cgroup"])
        #expect(notCgroup.status == 1, "\(notCgroup.output)")
        #expect(notCgroup.stderr.contains("required but missing: cgroup2"))
        #expect(!FileManager.default.fileExists(atPath: box.dir + "/not-a-cgroup"))
        #expect(try box.icebox(["doctor", "--require", "cgroup3"]).status == 64)
    }

    @Test("daemon --foreground while a daemon runs exits 1; freeze --pid of a frozen tree says already frozen")
    func smallFixes() throws {
        let box = Sandbox()
        defer { box.close() }
        #expect(try box.icebox(["launch", "keep", "--", "sleep", "1000"]).status == 0)
        let second = try box.icebox(["daemon", "--foreground"])
        #expect(second.status == 1)
        #expect(second.stderr.contains("another daemon already serves"))
        #expect(try box.icebox(["daemon"]).status == 0, "a plain `icebox daemon` finding one is still fine")

        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sleep")
        p.arguments = ["1000"]
        try p.run()
        defer { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() }
        let pid = String(p.processIdentifier)
        let first = try box.icebox(["freeze", "--pid", pid])
        #expect(first.stdout.contains("frozen in") && first.stdout.contains("(signal, 1 thread)"), "\(first.stdout)")
        let again = try box.icebox(["freeze", "--pid", pid])
        #expect(again.status == 0)
        #expect(again.stdout.contains("already frozen"), "\(again.stdout)")
        #expect(try box.icebox(["thaw", "--pid", pid]).stdout.contains("thawed in"))
        #expect(try box.icebox(["thaw", "--pid", pid]).stdout.contains("not frozen"))
    }
}

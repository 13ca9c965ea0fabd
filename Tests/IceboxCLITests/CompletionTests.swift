import Foundation
import Glibc
import IceboxCore
import Testing

@testable import IceboxCLI

/// The completion model is derived from the command specs that --help prints.
@Suite("Completion model")
struct CompletionModelTests {
    let model = CompletionModel(IceboxMain.commands.map { $0.spec }, version: IceboxMain.version)

    func command(_ name: String) throws -> CompletionModel.Command {
        try #require(model.commands.first { $0.name == name }, "no command \(name)")
    }

    @Test("placeholders become choices, prefixes, signal names, files and directories")
    func placeholders() {
        #expect(CompletionValues.from(placeholder: "auto|cgroup2|cgroup1|signal").words == ["auto", "cgroup2", "cgroup1", "signal"])
        let ready = CompletionValues.from(placeholder: "exec|notify|tcp:PORT|http:URL|cmd:PROBE")
        #expect(ready.words == ["exec", "notify"] && ready.prefixes == ["tcp:", "http:", "cmd:"])
        let signal = CompletionValues.from(placeholder: "SIG|auto|none")
        #expect(signal.words.contains("USR1") && signal.words.contains("auto") && signal.words.contains("none"))
        #expect(!signal.words.contains("KILL") && !signal.words.contains("STOP"), "an app cannot handle those")
        #expect(CompletionValues.from(placeholder: "FILE").source == .files)
        #expect(CompletionValues.from(placeholder: "PATH").source == .directories)
        #expect(CompletionValues.from(placeholder: "DUR").isEmpty)
        #expect(CompletionValues.from(placeholder: "SIZE|none").words == ["none"])
    }

    @Test("every command and option of --help is in the model, with --help")
    func everything() throws {
        for spec in IceboxMain.commands.map({ $0.spec }) {
            let c = try command(spec.name)
            #expect(c.options.map(\.name) == spec.options.map(\.name) + ["help"])
            #expect(c.commandAfter == spec.commandAfterPositionals)
        }
        #expect(try command("help").operand(0)?.words.contains("suspend") == true)
    }

    @Test("operands come from the usage line: app names, ended ones where they make sense, keywords")
    func operands() throws {
        for name in ["suspend", "resume", "terminate", "evict", "compact"] {
            #expect(try command(name).operand(0)?.source == .liveApps, "\(name)")
            #expect(try command(name).operand(5)?.source == .liveApps, "\(name) takes several names")
        }
        #expect(try command("switch").operand(1) == nil)
        for name in ["relaunch", "log", "logs"] { #expect(try command(name).operand(0)?.source == .allApps, "\(name)") }
        #expect(try command("launch").operand(0)?.isEmpty == true, "launch names a new app")
        #expect(try command("launch").commandAfter == 1)
        #expect(try command("run").operands.isEmpty && command("bench").operands.isEmpty)
        #expect(try command("policy").operand(0)?.words == ["set"])
        #expect(try command("completion").operand(0)?.words == ["bash", "zsh", "fish"])
        #expect(try command("probe").operand(0)?.prefixes == ["tcp:", "http:"])
        #expect(try command("freeze").operands.isEmpty, "--pid PID | --cgroup PATH are options")
        #expect(try command("ps").operand(0)?.source == .allApps, "ps NAME... filters, ended apps included")
    }

    @Test("every script names every command")
    func scriptsNameEverything() {
        for shell in CompletionShell.allCases {
            let script = shell.script(model)
            for c in model.commands { #expect(script.contains(c.name), "\(shell) script lacks \(c.name)") }
        }
    }
}

/// The generated scripts in the real shells, against a real daemon for the app names.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct CompletionShellTests {
    /// The sandbox's environment with the icebox under test first on PATH.
    func environment(_ box: Sandbox) -> [String: String] {
        var env = box.environment
        let binDir = URL(fileURLWithPath: Sandbox.binary).deletingLastPathComponent().path
        env["PATH"] = binDir + ":" + (env["PATH"] ?? "/usr/bin:/bin")
        return env
    }

    func script(_ box: Sandbox, _ shell: String) throws -> String {
        let r = try box.icebox(["completion", shell])
        #expect(r.status == 0, "\(r.stderr)")
        let path = box.dir + "/icebox." + shell
        try r.stdout.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func launchApps(_ box: Sandbox) throws {
        #expect(try box.icebox(["launch", "alpha", "--", "sleep", "60"]).status == 0)
        #expect(try box.icebox(["launch", "beta", "--", "sleep", "60"]).status == 0)
        #expect(try box.icebox(["launch", "gone", "--", "sleep", "60"]).status == 0)
        #expect(try box.icebox(["evict", "gone"]).status == 0)
    }

    @Test(
        "bash: commands, options, their values and the running apps' names complete",
        .enabled(if: ShellHarness.which("bash") != nil, "\(ShellHarness.missing("bash"))"))
    func bash() throws {
        let box = Sandbox()
        defer { box.close() }
        try launchApps(box)
        let script = try script(box, "bash")
        let driver = box.dir + "/driver.bash"
        try ShellHarness.bashDriver.write(toFile: driver, atomically: true, encoding: .utf8)
        #expect(try ShellHarness.run(["bash", "-n", script], environment: environment(box)).status == 0)
        let lines = [
            "icebox sus", "icebox ", "icebox -", "icebox launch --backend ", "icebox launch --backend=cg", "icebox run --back",
            "icebox launch --ready t", "icebox launch --ready=ht", "icebox bench --foreground-signal USR",
            "icebox suspend ", "icebox suspend alpha ", "icebox relaunch ", "icebox log ", "icebox launch ",
            "icebox compact --mode ", "icebox policy set --protect-active ", "icebox completion ", "icebox help sw",
            "icebox run sle", "icebox launch web sle", "icebox launch --grace 2s web -- sle", "icebox run -- ls \(box.dir)/drive",
            "icebox bench --export-json \(box.dir)/drive",
        ]
        let r = try ShellHarness.run(["bash", driver, script] + lines, environment: environment(box))
        #expect(r.status == 0, "\(r.output)")
        let got = ShellHarness.sections(r.stdout)
        #expect(got["icebox sus"] == ["suspend"])
        #expect(got["icebox "]?.contains("completion") == true && got["icebox "]?.contains("bench") == true)
        #expect(got["icebox -"] == ["--help", "--version"])
        #expect(got["icebox launch --backend "] == ["auto", "cgroup1", "cgroup2", "signal"])
        #expect(got["icebox launch --backend=cg"] == ["cgroup1", "cgroup2"], "after '=' bash replaces only the value")
        #expect(got["icebox run --back"] == ["--backend", "--background-signal"])
        #expect(got["icebox launch --ready t"] == ["tcp:"])
        #expect(got["icebox launch --ready=ht"] == ["http:"])
        #expect(got["icebox bench --foreground-signal USR"] == ["USR1", "USR2"])
        #expect(got["icebox suspend "] == ["alpha", "beta"], "the names of the apps running under the daemon")
        #expect(got["icebox suspend alpha "] == ["alpha", "beta"], "suspend takes several names")
        #expect(got["icebox relaunch "] == ["alpha", "beta", "gone"], "ended apps too")
        #expect(got["icebox log "] == ["alpha", "beta", "gone"])
        #expect(got["icebox launch "] == [], "a new app's name is the user's to choose")
        #expect(got["icebox compact --mode "] == ["cold", "pageout"])
        #expect(got["icebox policy set --protect-active "] == ["no", "yes"])
        #expect(got["icebox completion "] == ["bash", "fish", "zsh"])
        #expect(got["icebox help sw"] == ["switch"])
        #expect(got["icebox run sle"]?.contains("sleep") == true, "run's first operand is the app's command")
        #expect(got["icebox launch web sle"]?.contains("sleep") == true, "launch's second one")
        #expect(got["icebox launch --grace 2s web -- sle"]?.contains("sleep") == true)
        #expect(got["icebox run -- ls \(box.dir)/drive"] == ["\(box.dir)/driver.bash"], "the app's arguments complete as its own")
        #expect(got["icebox bench --export-json \(box.dir)/drive"] == ["\(box.dir)/driver.bash"])
    }

    @Test(
        "zsh: the script parses, registers through fpath, and completes in a real interactive zsh",
        .enabled(if: ShellHarness.which("zsh") != nil, "\(ShellHarness.missing("zsh"))"))
    func zsh() throws {
        let box = Sandbox()
        defer { box.close() }
        try launchApps(box)
        let fpath = box.dir + "/zfunctions"
        try FileManager.default.createDirectory(atPath: fpath, withIntermediateDirectories: true)
        let r0 = try box.icebox(["completion", "zsh"])
        try r0.stdout.write(toFile: fpath + "/_icebox", atomically: true, encoding: .utf8)
        #expect(try ShellHarness.run(["zsh", "-n", fpath + "/_icebox"], environment: environment(box)).status == 0)
        let driver = box.dir + "/driver.zsh"
        try ShellHarness.zshDriver.write(toFile: driver, atomically: true, encoding: .utf8)
        let lines = [
            "icebox sus", "icebox launch --backend ", "icebox launch --ready ", "icebox suspend ", "icebox relaunch ",
            "icebox run --back", "icebox launch web -- sle",
        ]
        let r = try ShellHarness.run(["timeout", "60", "zsh", "-f", driver, fpath] + lines, environment: environment(box), timeout: 70)
        #expect(r.status == 0, "\(r.output)")
        let got = ShellHarness.sections(r.stdout)
        #expect(got["icebox sus"] == ["suspend"])
        #expect(got["icebox launch --backend "] == ["auto", "cgroup1", "cgroup2", "signal"])
        #expect(got["icebox launch --ready "] == ["cmd:", "exec", "http:", "notify", "tcp:"])
        #expect(got["icebox suspend "] == ["alpha", "beta"])
        #expect(got["icebox relaunch "] == ["alpha", "beta", "gone"])
        #expect(got["icebox run --back"] == ["--backend", "--background-signal"])
        #expect(got["icebox launch web -- sle"]?.contains("sleep") == true)
    }

    @Test(
        "fish: the script parses and completes commands, option values and app names",
        .enabled(if: ShellHarness.which("fish") != nil, "\(ShellHarness.missing("fish"))"))
    func fish() throws {
        let box = Sandbox()
        defer { box.close() }
        try launchApps(box)
        let script = try script(box, "fish")
        #expect(try ShellHarness.run(["fish", "--no-execute", script], environment: environment(box)).status == 0)
        let lines = [
            "icebox sus", "icebox launch --backend ", "icebox launch --backend=cg", "icebox suspend ", "icebox relaunch ",
            "icebox run --back", "icebox run sle", "icebox launch web --grace 2s sle", "icebox completion ",
            "icebox run --backend signal ls --colo",
        ]
        let program =
            "source \(script.shellQuoted); for line in \(lines.map(\.shellQuoted).joined(separator: " ")); "
            + "echo \"== $line\"; complete -C\"$line\" | string replace -r '\\t.*' '' | sort -u; end"
        // fish's own completions (for the app's command line) without the user's config.
        var env = environment(box)
        env["HOME"] = box.dir
        env["XDG_CONFIG_HOME"] = box.dir + "/config"
        let r = try ShellHarness.run(["fish", "-c", program], environment: env)
        #expect(r.status == 0, "\(r.output)")
        let got = ShellHarness.sections(r.stdout)
        #expect(got["icebox sus"] == ["suspend"])
        #expect(got["icebox launch --backend "] == ["auto", "cgroup1", "cgroup2", "signal"])
        #expect(got["icebox launch --backend=cg"] == ["--backend=cgroup1", "--backend=cgroup2"])
        #expect(got["icebox suspend "] == ["alpha", "beta"])
        #expect(got["icebox relaunch "] == ["alpha", "beta", "gone"])
        #expect(got["icebox run --back"] == ["--backend", "--background-signal"])
        #expect(got["icebox run sle"]?.contains("sleep") == true)
        #expect(got["icebox launch web --grace 2s sle"]?.contains("sleep") == true)
        #expect(got["icebox completion "] == ["bash", "fish", "zsh"])
        #expect(got["icebox run --backend signal ls --colo"]?.contains("--color") == true, "the app's options, as ls completes them")
    }

    @Test("completion --names never starts a daemon; without one it reads the registry")
    func namesWithoutDaemon() throws {
        let box = Sandbox()
        defer { box.close() }
        let none = try box.icebox(["completion", "--names"])
        #expect(none.status == 0 && none.stdout.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: box.runtimeDir + "/icebox.sock"), "no daemon was started")
        try launchApps(box)
        #expect(try box.icebox(["completion", "--names"]).stdout.split(separator: "\n").sorted() == ["alpha", "beta"])
        #expect(try box.icebox(["completion", "--names", "--all"]).stdout.split(separator: "\n").sorted() == ["alpha", "beta", "gone"])
        // Stopped, the daemon leaves the apps running for the next one: their names stay.
        #expect(try box.icebox(["daemon", "--stop"]).status == 0)
        #expect(try box.icebox(["completion", "--names"]).stdout.split(separator: "\n").sorted() == ["alpha", "beta"])
        #expect(!FileManager.default.fileExists(atPath: box.runtimeDir + "/icebox.sock"), "still no daemon")
        #expect(try box.icebox(["completion", "--all"]).status == 64)
        #expect(try box.icebox(["completion", "tcsh"]).status == 64)
        #expect(try box.icebox(["completion"]).status == 64)
    }
}

extension CompletionModel.Command {
    /// The operand at a 0-based position, if any.
    func operand(_ index: Int) -> CompletionValues? {
        if index < operands.count { return operands[index] }
        return lastOperandRepeats ? operands.last : nil
    }
}

import Glibc
import IceboxCore
import Testing

@testable import IceboxCLI

/// Runs a throwing (typed IceboxError) body and checks that it fails with the given code.
private func expectUsageError(
    _ code: ExitCode = .usage, containing fragment: String? = nil,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws(IceboxError) -> Void
) {
    do {
        try body()
        Issue.record("expected an IceboxError with code \(code)", sourceLocation: sourceLocation)
    } catch {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        if let fragment {
            #expect(error.message.contains(fragment), "\(error.message)", sourceLocation: sourceLocation)
        }
    }
}

@Suite("ArgumentParser")
struct ArgumentParserTests {
    @Test func runTakesTheCommandWithoutDoubleDash() throws {
        let p = try ArgumentParser.parse(["python3", "-m", "http.server"], spec: RunCommand.spec)
        #expect(p.command == ["python3", "-m", "http.server"])
        #expect(p.positionals.isEmpty)
        #expect(p.valueNames.isEmpty && p.flags.isEmpty && !p.helpRequested)
    }

    @Test func runOptionsThenDoubleDash() throws {
        let p = try ArgumentParser.parse(["--name", "web", "--", "sleep", "1"], spec: RunCommand.spec)
        #expect(p.value("name") == "web")
        #expect(p.command == ["sleep", "1"])
        #expect(p.positionals.isEmpty)
    }

    @Test func optionValueAfterEquals() throws {
        let p = try ArgumentParser.parse(["--grace=2s", "sleep", "1"], spec: RunCommand.spec)
        #expect(p.value("grace") == "2s")
        #expect(p.command == ["sleep", "1"])
        let q = try ArgumentParser.parse(["--env=A=b=c", "--ready=cmd:curl -sf x", "true"], spec: RunCommand.spec)
        #expect(q.all("env") == ["A=b=c"])
        #expect(q.value("ready") == "cmd:curl -sf x")
    }

    @Test func optionsAfterTheCommandBelongToTheApp() throws {
        let p = try ArgumentParser.parse(["--grace", "1s", "sleep", "--grace", "9", "--help"], spec: RunCommand.spec)
        #expect(p.value("grace") == "1s")
        #expect(p.command == ["sleep", "--grace", "9", "--help"])
        #expect(!p.helpRequested)
    }

    @Test func launchTakesANameThenTheCommand() throws {
        let p = try ArgumentParser.parse(["web", "python3", "-m", "x"], spec: LaunchCommand.spec)
        #expect(p.positionals == ["web"])
        #expect(p.command == ["python3", "-m", "x"])
    }

    @Test func launchWithOptionsBetweenNameAndCommand() throws {
        let p = try ArgumentParser.parse(["web", "--ready", "tcp:8000", "--", "python3", "-m", "http.server"], spec: LaunchCommand.spec)
        #expect(p.positionals == ["web"])
        #expect(p.value("ready") == "tcp:8000")
        #expect(p.command == ["python3", "-m", "http.server"])
    }

    @Test func repeatableOptionsCollectEveryValue() throws {
        let p = try ArgumentParser.parse(["--env", "A=1", "--env", "B=2", "web", "sleep"], spec: LaunchCommand.spec)
        #expect(p.all("env") == ["A=1", "B=2"])
        #expect(p.value("env") == "B=2")
    }

    @Test func flagsAreRecorded() throws {
        let p = try ArgumentParser.parse(["--no-autostart", "web"], spec: SuspendCommand.spec)
        #expect(p.flag("no-autostart"))
        #expect(!p.flag("cgroup-root"))
        #expect(p.positionals == ["web"])
    }

    @Test func doubleDashWithoutACommandSpecGivesPositionals() throws {
        let p = try ArgumentParser.parse(["a", "--", "-b", "--c"], spec: SuspendCommand.spec)
        #expect(p.positionals == ["a", "-b", "--c"])
        #expect(p.command.isEmpty)
    }

    @Test func negativeNumbersArePositionals() throws {
        let p = try ArgumentParser.parse(["-5"], spec: SuspendCommand.spec)
        #expect(p.positionals == ["-5"])
    }

    @Test func unknownOptionIsAUsageError() {
        expectUsageError(containing: "unknown option --bogus") { () throws(IceboxError) in
            _ = try ArgumentParser.parse(["--bogus", "sleep"], spec: RunCommand.spec)
        }
        expectUsageError(containing: "unknown option -x") { () throws(IceboxError) in
            _ = try ArgumentParser.parse(["-x", "sleep"], spec: RunCommand.spec)
        }
        expectUsageError { () throws(IceboxError) in
            _ = try ArgumentParser.parse(["--name", "web", "sleep"], spec: LaunchCommand.spec)  // name is run's, not launch's
        }
    }

    @Test func missingValueIsAUsageError() {
        expectUsageError(containing: "--grace needs a value") { () throws(IceboxError) in
            _ = try ArgumentParser.parse(["--grace"], spec: RunCommand.spec)
        }
    }

    @Test func aFlagWithAValueIsAUsageError() {
        expectUsageError(containing: "takes no value") { () throws(IceboxError) in
            _ = try ArgumentParser.parse(["--no-autostart=yes", "sleep"], spec: RunCommand.spec)
        }
    }

    @Test func aSingleValueOptionTwiceIsAUsageError() {
        expectUsageError(containing: "given twice") { () throws(IceboxError) in
            _ = try ArgumentParser.parse(["--grace", "1s", "--grace=2s", "sleep"], spec: RunCommand.spec)
        }
    }

    @Test func usageErrorsCarryTheCommandsUsageAsHint() {
        do {
            _ = try ArgumentParser.parse(["--bogus"], spec: LaunchCommand.spec)
            Issue.record("no error")
        } catch {
            #expect(error.hint?.contains("icebox launch --help") == true)
        }
    }

    @Test(arguments: ["--help", "-h"])
    func helpIsRequested(_ flag: String) throws {
        let p = try ArgumentParser.parse([flag], spec: RunCommand.spec)
        #expect(p.helpRequested)
        #expect(p.command.isEmpty)
        let q = try ArgumentParser.parse(["web", flag], spec: SuspendCommand.spec)
        #expect(q.helpRequested)
    }

    @Test func durationOptionFallsBackAndValidates() throws {
        #expect(try ParsedArguments().duration("grace") == nil)
        #expect(try ArgumentParser.parse(["--grace", "250ms"], spec: SuspendCommand.spec).duration("grace") == 250_000_000)
        expectUsageError(containing: "invalid duration '5x' for --grace") { () throws(IceboxError) in
            _ = try ArgumentParser.parse(["--grace", "5x"], spec: SuspendCommand.spec).duration("grace")
        }
    }

    @Test func helpTextListsEveryOption() {
        let help = RunCommand.spec.help
        #expect(help.hasPrefix("usage: icebox run"))
        for option in RunCommand.spec.options { #expect(help.contains("--\(option.name)"), "--\(option.name)") }
        #expect(help.contains("--help"))
    }
}

@Suite("LaunchArguments.build")
struct LaunchArgumentsTests {
    static func build(_ args: [String], name: String = "web", command: [String] = ["sleep", "1"]) throws(IceboxError) -> LaunchOptions {
        let parsed = try ArgumentParser.parse(args, spec: LaunchCommand.spec)
        return try LaunchArguments.build(name: name, nameIsDefault: false, command: command, parsed, attached: false)
    }

    @Test func defaults() throws {
        let o = try Self.build([])
        #expect(o.name == "web" && o.command == ["sleep", "1"])
        #expect(o.backend == .auto)
        #expect(o.graceNanos == 5_000_000_000 && o.maxGraceNanos == 30_000_000_000)
        #expect(o.backgroundSignal == .auto && o.foregroundSignal == nil)
        #expect(o.ready == .exec)
        #expect(!o.attached)
        #expect(o.extraEnvironment.isEmpty)
        #expect(o.workingDirectory != nil)
        #expect(!o.environment.isEmpty)
        #expect(!o.environment.contains { $0.hasPrefix("ICEBOX_READY_FD=") })
    }

    @Test func acceptsEveryOption() throws {
        let o = try Self.build([
            "--backend", "signal", "--grace", "2s", "--max-grace=1m", "--background-signal", "USR2",
            "--foreground-signal", "SIGCONT", "--ready", "tcp:8000", "--ready-timeout", "1m30s",
            "--cwd", "/", "--env", "A=1", "--env", "B=x=y",
        ])
        #expect(o.backend == .signal)
        #expect(o.graceNanos == 2_000_000_000)
        #expect(o.maxGraceNanos == 60_000_000_000)
        #expect(o.backgroundSignal == .signal(12))
        #expect(o.foregroundSignal == SIGCONT)
        #expect(o.ready == .tcp(8000))
        #expect(o.readyTimeoutNanos == 90_000_000_000)
        #expect(o.workingDirectory == "/")
        #expect(o.extraEnvironment == ["A=1", "B=x=y"])
    }

    @Test(arguments: ["USR2", "SIGUSR2", "usr2", "12"])
    func backgroundSignalIsStoredAsANumber(_ text: String) throws {
        #expect(try Self.build(["--background-signal", text]).backgroundSignal == .signal(12))
    }

    @Test func backgroundSignalAutoAndNoneAreKept() throws {
        #expect(try Self.build(["--background-signal", "auto"]).backgroundSignal == .auto)
        #expect(try Self.build(["--background-signal", "none"]).backgroundSignal == NoticeSignal.none)
        #expect(try Self.build(["--foreground-signal", "none"]).foregroundSignal == nil)
    }

    @Test func foregroundSignalRefusesAuto() {
        expectUsageError(containing: "unknown signal 'auto'") { () throws(IceboxError) in
            _ = try Self.build(["--foreground-signal", "auto"])
        }
    }

    @Test func graceLongerThanTheDefaultCapRaisesTheCap() throws {
        let o = try Self.build(["--grace", "45s"])
        #expect(o.graceNanos == 45_000_000_000)
        #expect(o.maxGraceNanos == 45_000_000_000)
    }

    @Test func rejectsABadDuration() {
        expectUsageError(containing: "--grace") { () throws(IceboxError) in _ = try Self.build(["--grace", "5x"]) }
        expectUsageError(containing: "--max-grace") { () throws(IceboxError) in _ = try Self.build(["--max-grace", "-1"]) }
        expectUsageError(containing: "--ready-timeout") { () throws(IceboxError) in _ = try Self.build(["--ready-timeout", "soon"]) }
    }

    @Test func rejectsABadSignal() {
        expectUsageError(containing: "unknown signal 'SIGFOO'") { () throws(IceboxError) in
            _ = try Self.build(["--background-signal", "SIGFOO"])
        }
        expectUsageError(containing: "unknown signal") { () throws(IceboxError) in _ = try Self.build(["--foreground-signal", "99"]) }
    }

    @Test(arguments: ["KILL", "SIGKILL", "9", "STOP", "19"])
    func refusesSignalsAnAppCannotHandle(_ sig: String) {
        expectUsageError(containing: "an app cannot handle it") { () throws(IceboxError) in
            _ = try Self.build(["--background-signal", sig])
        }
        expectUsageError(containing: "an app cannot handle it") { () throws(IceboxError) in
            _ = try Self.build(["--foreground-signal", sig])
        }
    }

    @Test func rejectsABadBackend() {
        expectUsageError(containing: "unknown backend 'cgroup3'") { () throws(IceboxError) in _ = try Self.build(["--backend", "cgroup3"]) }
    }

    @Test(arguments: ["noequals", "=value"])
    func rejectsABadEnv(_ env: String) {
        expectUsageError(containing: "invalid --env") { () throws(IceboxError) in _ = try Self.build(["--env", "A=1", "--env", env]) }
    }

    @Test func rejectsAMaxGraceShorterThanGrace() {
        expectUsageError(containing: "shorter than --grace") { () throws(IceboxError) in
            _ = try Self.build(["--grace", "10s", "--max-grace", "5s"])
        }
    }

    @Test func rejectsABadReadyMode() {
        expectUsageError(containing: "invalid --ready") { () throws(IceboxError) in _ = try Self.build(["--ready", "tcp:0"]) }
    }

    @Test func rejectsAMissingWorkingDirectory() {
        expectUsageError(containing: "no such directory") { () throws(IceboxError) in
            _ = try Self.build(["--cwd", "/nonexistent/icebox-unit"])
        }
    }

    @Test func rejectsAnEmptyCommandAndABadName() {
        expectUsageError(containing: "no command given") { () throws(IceboxError) in _ = try Self.build([], command: []) }
        expectUsageError(containing: "invalid app name") { () throws(IceboxError) in _ = try Self.build([], name: "bad name!") }
    }
}

@Suite("IceboxMain exit codes")
struct IceboxMainTests {
    @Test func versionExitsZero() {
        #expect(IceboxMain.main(["icebox", "--version"]) == 0)
        #expect(IceboxMain.main(["icebox", "version"]) == 0)
    }

    @Test func everyCommandIsFoundByItsName() {
        for c in IceboxMain.commands {
            let found = IceboxMain.command(named: c.name)
            #expect(found.map(ObjectIdentifier.init) == ObjectIdentifier(c), "\(c.name) finds \(String(describing: found))")
            #expect(c.spec.name == c.name)
        }
        #expect(IceboxMain.command(named: "nope") == nil)
        #expect(IceboxMain.command(named: "") == nil)
    }

    @Test func anUnknownCommandIsAUsageError() {
        #expect(IceboxMain.main(["icebox", "nosuchcommand"]) == 64)
    }

    @Test func noCommandIsAUsageError() {
        #expect(IceboxMain.main(["icebox"]) == 64)
    }

    @Test func aBadAppNameIsRefusedBeforeAnyDaemonContact() {
        #expect(IceboxMain.main(["icebox", "suspend", "bad name!"]) == 64)
        #expect(IceboxMain.main(["icebox", "resume", "ok", "a/b"]) == 64)
    }

    @Test func anUnknownOptionOfACommandIsAUsageError() {
        #expect(IceboxMain.main(["icebox", "suspend", "--bogus", "web"]) == 64)
    }

    @Test func launchWithoutACommandIsAUsageError() {
        #expect(IceboxMain.main(["icebox", "launch", "web"]) == 64)
        #expect(IceboxMain.main(["icebox", "launch", "web", "--grace", "5x", "sleep", "1"]) == 64)
    }

    @Test func commandHelpExitsZero() {
        #expect(IceboxMain.main(["icebox", "suspend", "--help"]) == 0)
        #expect(IceboxMain.main(["icebox", "help", "run"]) == 0)
    }
}

import Glibc
import IceboxCore

/// A command: a static spec (what --help prints and the parser accepts) and a run function.
protocol IceboxCommand {
    /// What the user types; also `spec.name`. Separate so that finding the command does not
    /// build every command's spec (help texts and all): that was ~15% of a one-shot's CPU.
    static var name: String { get }
    static var spec: CommandSpec { get }
    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32
}

public enum IceboxMain {
    public static let version = "icebox 0.1.0"

    static var commands: [any IceboxCommand.Type] {
        [
            RunCommand.self, LaunchCommand.self, AdoptCommand.self, ReleaseCommand.self,
            SuspendCommand.self, ResumeCommand.self, SwitchCommand.self, TerminateCommand.self, EvictCommand.self, RelaunchCommand.self,
            CompactCommand.self, PolicyCommand.self,
            PsCommand.self, TopCommand.self, LogCommand.self, LogsCommand.self, MetricsCommand.self,
            BenchCommand.self, FreezeCommand.self, ThawCommand.self, DoctorCommand.self, DaemonCommand.self, ProbeCommand.self,
            CompletionCommand.self,
        ]
    }

    /// The command named `name`, found without `commands`: that array of existential metatypes
    /// costs ~4% of a one-shot suspend's CPU. `IceboxMainTests` holds the two to the same commands.
    static func command(named name: String) -> (any IceboxCommand.Type)? {
        switch name {
        case RunCommand.name: RunCommand.self
        case LaunchCommand.name: LaunchCommand.self
        case AdoptCommand.name: AdoptCommand.self
        case ReleaseCommand.name: ReleaseCommand.self
        case SuspendCommand.name: SuspendCommand.self
        case ResumeCommand.name: ResumeCommand.self
        case SwitchCommand.name: SwitchCommand.self
        case TerminateCommand.name: TerminateCommand.self
        case EvictCommand.name: EvictCommand.self
        case RelaunchCommand.name: RelaunchCommand.self
        case CompactCommand.name: CompactCommand.self
        case PolicyCommand.name: PolicyCommand.self
        case PsCommand.name: PsCommand.self
        case TopCommand.name: TopCommand.self
        case LogCommand.name: LogCommand.self
        case LogsCommand.name: LogsCommand.self
        case MetricsCommand.name: MetricsCommand.self
        case BenchCommand.name: BenchCommand.self
        case FreezeCommand.name: FreezeCommand.self
        case ThawCommand.name: ThawCommand.self
        case DoctorCommand.name: DoctorCommand.self
        case DaemonCommand.name: DaemonCommand.self
        case ProbeCommand.name: ProbeCommand.self
        case CompletionCommand.name: CompletionCommand.self
        default: nil
        }
    }

    /// What `icebox` itself accepts before the command.
    static let topLevelOptions = ["--help", "--version", "--color"]

    static var overview: String {
        var text = """
            usage: icebox [--color WHEN] COMMAND [OPTIONS] [ARGS]

            icebox gives Linux processes the mobile app lifecycle: launch, a background notice
            and grace period, freeze and thaw (cgroup v2, the v1 freezer or SIGSTOP), terminate
            and evict, with every step timed.

            commands:

            """
        for c in commands {
            let name = "  " + c.spec.name
            text += name + String(repeating: " ", count: max(2, 14 - name.count)) + c.spec.summary + "\n"
        }
        text += "\noptions:\n" + CommandSpec.optionLines(CommandSpec.globalOptions)
        text += CommandSpec.optionLines([
            CommandSpec.helpOption, OptionSpec(name: "version", value: nil, help: "print the version", short: "V"),
        ])
        text += """

            Run 'icebox COMMAND --help' for a command's options, 'man icebox' for everything.
            Exit codes: 0 ok, 1 failed, 64 usage, 69 unavailable, 77 permission denied,
            126/127 command not executable/not found, 130/143 interrupted by SIGINT/SIGTERM;
            run exits with the app's status.
            """
        return text
    }

    public static func main(_ argv: [String]) -> Int32 {  // parses and runs; returns the exit code
        // A parent may hand us blocked signals (swift-corelibs-foundation's Process does):
        // start from an empty mask so Ctrl-C and SIGTERM work as users expect.
        var empty = sigset_t()
        sigemptyset(&empty)
        sigprocmask(SIG_SETMASK, &empty, nil)
        var args = Array(argv.dropFirst())
        configureColor(.auto)
        // Options of icebox itself, before the command.
        var color: String?
        while let first = args.first, first.hasPrefix("-") {
            if first == "--help" || first == "-h" { break }
            if first == "--version" || first == "-V" || first == "-v" {
                Output.out(version)
                return 0
            }
            if first == "--color" || first.hasPrefix("--color=") {
                if first == "--color" {
                    guard args.count > 1 else { return fail(IceboxError(.usage, "--color needs a value (auto, always or never)")) }
                    color = args[1]
                    args.removeFirst(2)
                } else {
                    color = String(first.dropFirst("--color=".count))
                    args.removeFirst()
                }
                continue
            }
            return fail(
                IceboxError(
                    .usage, "unknown option '\(first)'" + Suggestions.didYouMean(first, among: topLevelOptions),
                    hint: "options of a command go after it: icebox COMMAND --help"))
        }
        if let color, let error = applyColor(color) { return fail(error) }
        guard let first = args.first else {
            Output.err(overview)
            return ExitCode.usage.rawValue
        }
        var names: [String] { commands.map { $0.name } }
        if first == "--help" || first == "-h" || first == "help" {
            if args.count > 1 {
                guard let c = command(named: args[1]) else {
                    return fail(
                        IceboxError(
                            .usage, "no help on '\(args[1])': not a command" + Suggestions.didYouMean(args[1], among: names),
                            hint: "see icebox --help"))
                }
                Output.out(c.spec.help)
            } else {
                Output.out(overview)
            }
            return 0
        }
        if first == "version" {
            Output.out(version)
            return 0
        }
        guard let command = command(named: first) else {
            return fail(
                IceboxError(.usage, "unknown command '\(first)'" + Suggestions.didYouMean(first, among: names), hint: "see icebox --help"))
        }
        do {
            let parsed = try ArgumentParser.parse(Array(args.dropFirst()), spec: command.spec)
            if let color = parsed.value("color"), let error = applyColor(color) { return fail(error) }
            if parsed.helpRequested {
                Output.out(command.spec.help)
                return 0
            }
            return try command.run(parsed)
        } catch {
            return fail(error)
        }
    }

    static func fail(_ error: IceboxError) -> Int32 {
        // An error may quote the daemon, an app (a probe's answer) or an argument.
        Output.err("icebox: " + TerminalText.escaped("\(error)", keepingLayout: true))
        return error.code.rawValue
    }

    /// Applies --color WHEN; nil, or the usage error for a WHEN that is none of the choices.
    static func applyColor(_ text: String) -> IceboxError? {
        do { _ = try ArgumentParser.choice(text, option: "color", among: ColorChoice.allCases.map(\.rawValue)) } catch { return error }
        configureColor(ColorChoice(rawValue: text)!)  // one of the choices: checked just above
        return nil
    }

    static func configureColor(_ choice: ColorChoice) {
        let noColor = ProcessEnvironment.value("NO_COLOR"), term = ProcessEnvironment.value("TERM")
        Output.colorOut = Terminal.colorEnabled(choice: choice, noColor: noColor, term: term, isTerminal: isatty(1) == 1)
        Output.colorErr = Terminal.colorEnabled(choice: choice, noColor: noColor, term: term, isTerminal: isatty(2) == 1)
    }
}

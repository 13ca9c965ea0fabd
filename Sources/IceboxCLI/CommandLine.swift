import Glibc
import IceboxCore

/// A command: a static spec (what --help prints and the parser accepts) and a run function.
protocol IceboxCommand {
    static var spec: CommandSpec { get }
    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32
}

public enum IceboxMain {
    public static let version = "icebox 0.1.0"

    static var commands: [any IceboxCommand.Type] {
        [
            RunCommand.self, LaunchCommand.self,
            SuspendCommand.self, ResumeCommand.self, SwitchCommand.self, TerminateCommand.self, EvictCommand.self, RelaunchCommand.self,
            CompactCommand.self, PolicyCommand.self,
            PsCommand.self, LogCommand.self, LogsCommand.self, MetricsCommand.self,
            BenchCommand.self, FreezeCommand.self, ThawCommand.self, DoctorCommand.self, DaemonCommand.self, ProbeCommand.self,
        ]
    }

    static var overview: String {
        var text = """
            usage: icebox COMMAND [OPTIONS] [ARGS]

            icebox gives Linux processes the mobile app lifecycle: launch, a background notice
            and grace period, freeze and thaw (cgroup v2, the v1 freezer or SIGSTOP), terminate
            and evict, with every step timed.

            commands:

            """
        for c in commands {
            let name = "  " + c.spec.name
            text += name + String(repeating: " ", count: max(2, 14 - name.count)) + c.spec.summary + "\n"
        }
        text += """

            Run 'icebox COMMAND --help' for a command's options, 'man icebox' for everything.
            Exit codes: 0 ok, 1 failed, 64 usage, 69 unavailable, 77 permission denied,
            126/127 command not executable/not found; run exits with the app's status.
            """
        return text
    }

    /// Parses and runs; returns the process exit code.
    public static func main(_ argv: [String]) -> Int32 {
        // A parent may hand us blocked signals (swift-corelibs-foundation's Process does):
        // start from an empty mask so Ctrl-C and SIGTERM work as users expect.
        var empty = sigset_t()
        sigemptyset(&empty)
        sigprocmask(SIG_SETMASK, &empty, nil)
        let args = Array(argv.dropFirst())
        guard let first = args.first else {
            Output.err(overview)
            return ExitCode.usage.rawValue
        }
        if first == "--help" || first == "-h" || first == "help" {
            if args.count > 1, let c = commands.first(where: { $0.spec.name == args[1] }) {
                Output.out(c.spec.help)
            } else {
                Output.out(overview)
            }
            return 0
        }
        if first == "--version" || first == "version" {
            Output.out(version)
            return 0
        }
        guard let command = commands.first(where: { $0.spec.name == first }) else {
            Output.err("icebox: unknown command '\(first)' (see icebox --help)")
            return ExitCode.usage.rawValue
        }
        do {
            let parsed = try ArgumentParser.parse(Array(args.dropFirst()), spec: command.spec)
            if parsed.helpRequested {
                Output.out(command.spec.help)
                return 0
            }
            return try command.run(parsed)
        } catch {
            Output.err("icebox: \(error)")
            return error.code.rawValue
        }
    }
}

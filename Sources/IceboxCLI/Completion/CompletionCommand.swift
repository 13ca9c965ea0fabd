import IceboxCore
import IceboxSystem

/// icebox completion bash|zsh|fish: a completion script generated from the same command
/// specs as --help; and `--names`, the app names the scripts offer.
enum CompletionCommand: IceboxCommand {
    static let name = "completion"
    static let spec = CommandSpec(
        name: name, usage: "icebox completion bash|zsh|fish | --names [--all]",
        summary: "print a completion script for bash, zsh or fish: commands, options, their values, app names",
        options: [
            OptionSpec(
                name: "names", value: nil,
                help: "print the running daemon's app names, one a line (the scripts' source; never starts a daemon)"),
            OptionSpec(name: "all", value: nil, help: "with --names: the ended apps too"),
        ],
        details: """
            Load a script for this shell only, or install it (scripts/install does, for all three):
              bash:  source <(icebox completion bash)
              zsh:   icebox completion zsh > ~/.zfunc/_icebox   (a directory of $fpath, before compinit)
              fish:  icebox completion fish > ~/.config/fish/completions/icebox.fish
            App names come from 'icebox completion --names', which asks the running daemon (for at
            most a second) and never starts one; with no daemon, it reads the registry.
            """)

    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        if args.flag("names") {
            if !args.positionals.isEmpty { throw ArgumentParser.usage("--names takes no shell", spec) }
            for name in appNames(all: args.flag("all"), environment: ProcessEnvironment.dictionary) { Output.out(name) }
            return 0
        }
        if args.flag("all") { throw ArgumentParser.usage("--all goes with --names", spec) }
        guard args.positionals.count == 1 else { throw ArgumentParser.usage("completion needs one shell: bash, zsh or fish", spec) }
        guard let shell = CompletionShell(rawValue: args.positionals[0]) else {
            throw ArgumentParser.usage("no completion for '\(args.positionals[0])': the shells are bash, zsh and fish", spec)
        }
        Output.writeAll(1, shell.script(CompletionModel(IceboxMain.commands.map { $0.spec }, version: IceboxMain.version)))
        return 0
    }

    /// The apps' names (see the details above): a completion must never start a daemon nor
    /// hang the shell, so with none answering within a second, the registry's.
    static func appNames(all: Bool, environment: [String: String]) -> [String] {
        var client = DaemonClient(environment: { environment[$0] }, autostartFlagOff: true, cgroupRoot: nil)
        if let connection = try? client.session.connect(), (try? connection.send(ControlRequest.ps(all: all))) != nil {
            var records: [AppRecord] = []
            let code = try? connection.replies(until: Clock.monotonicNanos() + 1_000_000_000, what: "ps") { reply in
                if reply.kind == .data { records = reply.apps ?? [] }
            }
            if code == 0 { return records.map(\.name) }
        }
        return Registry.load(directory: client.paths.registryDir).filter { all || !$0.state.isEnded }.map(\.name)
    }
}

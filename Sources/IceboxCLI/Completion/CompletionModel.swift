import IceboxSystem

/// What a shell may offer for one word: literal choices, prefixes completed without a
/// trailing space (`tcp:`), or a kind of word the shell finds itself (files, app names).
struct CompletionValues: Equatable, Hashable, Sendable {
    enum Source: String, Equatable, Hashable, Sendable {
        case none
        case files
        case directories
        case liveApps = "live-apps"  // the apps a running daemon supervises (`icebox completion --names`)
        case allApps = "all-apps"  // and the ended ones (`--names --all`)
    }

    var words: [String] = []
    var prefixes: [String] = []
    var source: Source = .none

    var isEmpty: Bool { words.isEmpty && prefixes.isEmpty && source == .none }

    /// From a placeholder as `--help` shows it: `auto|cgroup2|cgroup1|signal` lists the
    /// choices, `tcp:PORT` offers `tcp:`, `SIG` the signal names an app can handle, `FILE`
    /// files, `DIR` and `PATH` directories; other capitals (DUR, N, SIZE, NAME) are free text.
    static func from(placeholder: String) -> CompletionValues {
        var v = CompletionValues()
        for alternative in placeholder.split(separator: "|").map(String.init) {
            if let colon = alternative.firstIndex(of: ":"), colon != alternative.startIndex,
                alternative[..<colon].allSatisfy({ $0.isLowercase })
            {
                v.prefixes.append(String(alternative[...colon]))
            } else if alternative.allSatisfy({ $0.isLowercase || $0.isNumber || $0 == "-" }) {
                v.words.append(alternative)
            } else {
                switch alternative {
                // SIGKILL and SIGSTOP cannot be handled, so --*-signal refuses them.
                case "SIG": v.words += Signals.names.filter { $0 != "KILL" && $0 != "STOP" }
                case "FILE": v.source = .files
                case "DIR", "PATH": v.source = .directories
                default: break
                }
            }
        }
        return v
    }
}

/// Everything the completion scripts know, derived from the `CommandSpec`s that `--help`
/// prints and the parser accepts, so a new command or option completes as soon as it exists.
struct CompletionModel: Sendable {
    struct Command: Sendable {
        var name: String
        var summary: String
        var options: [OptionSpec]
        var operands: [CompletionValues]  // what each (NAME, set, bash|zsh|fish) may be, in order
        var lastOperandRepeats: Bool  // `NAME...`
        var commandAfter: Int?  // run, launch and bench: after this many operands, the app's command line
    }

    /// Commands whose NAME may be an app that has ended (its record stays for these).
    static let commandsOnEndedApps: Set<String> = ["relaunch", "log", "logs", "ps"]

    var commands: [Command]
    var version: String

    init(_ specs: [CommandSpec], version: String) {
        self.version = version
        commands = specs.map(Self.command)
        // `icebox help COMMAND`, as the overview says.
        commands.append(
            Command(
                name: "help", summary: "show the overview, or a command's help", options: [],
                operands: [CompletionValues(words: specs.map(\.name))], lastOperandRepeats: false, commandAfter: nil))
    }

    static func command(_ spec: CommandSpec) -> Command {
        let (operands, repeats) = operands(of: spec)
        // --help: the option every command takes besides its own.
        return Command(
            name: spec.name, summary: spec.summary, options: spec.options + [CommandSpec.helpOption], operands: operands,
            lastOperandRepeats: repeats, commandAfter: spec.commandAfterPositionals)
    }

    /// The operands a usage line names, after `icebox COMMAND`: option groups (`--pid PID`)
    /// and OPTIONS/SETTINGS are skipped, and CMD ends them (the app's command line follows).
    /// A NAME is an app's name, except where the command creates the app (launch NAME).
    static func operands(of spec: CommandSpec) -> ([CompletionValues], repeats: Bool) {
        let tokens = spec.usage.split(separator: " ").dropFirst(2).map { $0.filter { $0 != "[" && $0 != "]" } }
        var operands: [CompletionValues] = []
        var repeats = false
        var skipValue = false
        for token in tokens {
            if skipValue {
                skipValue = false
                continue
            }
            if token.isEmpty || token == "|" || token == "OPTIONS" || token == "SETTINGS" { continue }
            if token.hasPrefix("-") {
                skipValue = spec.options.first { "--" + $0.name == token }?.value != nil
                continue
            }
            if token == "CMD" || token.hasPrefix("ARG") { break }
            var word = token
            if word.hasSuffix("...") {
                word.removeLast(3)
                repeats = true
            }
            if word != "NAME" {
                operands.append(.from(placeholder: word))
            } else if spec.commandAfterPositionals != nil {
                operands.append(CompletionValues())  // a new app's name: nothing to offer
            } else {
                operands.append(CompletionValues(source: commandsOnEndedApps.contains(spec.name) ? .allApps : .liveApps))
            }
        }
        return (operands, repeats)
    }
}

/// The shells `icebox completion` writes scripts for.
enum CompletionShell: String, CaseIterable, Sendable {
    case bash, zsh, fish

    func script(_ model: CompletionModel) -> String {
        switch self {
        case .bash: return BashCompletion.script(model)
        case .zsh: return ZshCompletion.script(model)
        case .fish: return FishCompletion.script(model)
        }
    }
}

extension String {
    /// Quoted for a POSIX shell (bash, zsh): as is when safe, else in single quotes.
    var shellQuoted: String {
        let safe = !isEmpty && allSatisfy { $0.isLetter || $0.isNumber || "-_./:=+@%,".contains($0) }
        return safe ? self : "'" + replacing("'", with: "'\\''") + "'"
    }
}

extension OptionSpec {
    /// What the option's value may be, from its placeholder; nil for a flag.
    var values: CompletionValues? { value.map(CompletionValues.from(placeholder:)) }
}

import IceboxCore

/// One option a command accepts: `--name VALUE` (or `--name=VALUE`), or a flag; maybe also
/// a one-letter form (`-n 20`, `-n20`, flags bundled as `-aq`) and other long names.
struct OptionSpec: Sendable {
    let name: String
    let value: String?  // the placeholder shown in help; nil for a flag
    let help: String
    var repeatable = false
    var short: Character? = nil
    var aliases: [String] = []

    /// "-a, --all", "    --format TEMPLATE": how help shows the option.
    var synopsis: String {
        (short.map { "-\($0), " } ?? "    ") + "--\(name)" + (value.map { " \($0)" } ?? "")
    }
}

/// How many operands (arguments that are not options) a command takes, and how to say so.
struct Operands: Sendable {
    let max: Int
    let text: String  // "no arguments", "one app name", ...

    static let nothing = Operands(max: 0, text: "no arguments")
}

/// The static description of a command: what --help prints and what the parser accepts.
struct CommandSpec: Sendable {
    let name: String
    let usage: String
    let summary: String
    let options: [OptionSpec]
    /// For run and launch: after this many positionals, everything else is the app's command
    /// line (so `icebox run python3 -m http.server` needs no `--`).
    var commandAfterPositionals: Int?
    var details: String = ""
    /// The most operands the command takes (nil: any number); more is a usage error.
    var operands: Operands? = nil

    /// Options every command accepts (and `icebox` itself, before the command).
    static let globalOptions = [
        OptionSpec(
            name: "color", value: "WHEN",
            help: "colour output: auto (on a terminal, unless NO_COLOR is set; the default), always or never")
    ]
    static let helpOption = OptionSpec(name: "help", value: nil, help: "show this help", short: "h")

    var help: String {
        var text = "usage: \(usage)\n\n\(summary)\n"
        if !details.isEmpty { text += "\n\(details)\n" }
        text += "\noptions:\n" + Self.optionLines(options + [Self.helpOption])
        text += "\nglobal options:\n" + Self.optionLines(Self.globalOptions)
        return text
    }

    /// Options in two columns, the help text starting at column 30.
    static func optionLines(_ options: [OptionSpec]) -> String {
        var text = ""
        for o in options {
            let left = "  " + o.synopsis
            let pad = left.count < 30 ? String(repeating: " ", count: 30 - left.count) : "\n" + String(repeating: " ", count: 30)
            let also = o.aliases.isEmpty ? "" : " (also " + o.aliases.map { "--" + $0 }.joined(separator: ", ") + ")"
            text += left + pad + o.help + also + "\n"
        }
        return text
    }
}

/// What the parser found, in arrays of String searched in order (a command has a handful of
/// options): a dictionary and a set would cost every one-shot command two more families of
/// generic type metadata at run time, where `[String]` is there already for the arguments.
struct ParsedArguments {
    /// Every option value given, as (name, value) in the order given: `valueNames[i]`'s.
    private(set) var valueNames: [String] = []
    private(set) var valueTexts: [String] = []
    private(set) var flags: [String] = []  // each once
    var positionals: [String] = []
    var command: [String] = []
    var helpRequested = false

    func value(_ name: String) -> String? {  // the last given
        valueNames.lastIndex(of: name).map { valueTexts[$0] }
    }

    func all(_ name: String) -> [String] {  // every value given, in order
        var out: [String] = []
        for (i, n) in valueNames.enumerated() where n == name { out.append(valueTexts[i]) }
        return out
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }

    /// The duration given for `name` (nil: none given), or a usage error.
    func duration(_ name: String) throws(IceboxError) -> UInt64? {
        guard let text = value(name) else { return nil }
        guard let nanos = DurationText.parse(text) else {
            throw IceboxError(.usage, "invalid duration '\(text)' for --\(name)", hint: "write it like 250ms, 5s, 1.5s, 1m30s or 100us")
        }
        return nanos
    }

    /// The word given for `name` as a T (nil: none given), or a usage error with `hint`.
    func choice<T: RawRepresentable>(_ name: String, hint: String) throws(IceboxError) -> T? where T.RawValue == String {
        guard let text = value(name) else { return nil }
        guard let chosen = T(rawValue: text) else { throw IceboxError(.usage, "invalid --\(name) '\(text)'", hint: hint) }
        return chosen
    }

    mutating func add(_ value: String, for name: String) {
        valueNames.append(name)
        valueTexts.append(value)
    }

    mutating func set(flag name: String) {
        if !flags.contains(name) { flags.append(name) }
    }
}

enum ArgumentParser {
    static func parse(_ args: [String], spec: CommandSpec) throws(IceboxError) -> ParsedArguments {
        // The command's options, then the global ones, searched in place: the two joined
        // into a new array cost a one-shot command the run-time metadata of [OptionSpec].
        func option(where matches: (OptionSpec) -> Bool) -> OptionSpec? {
            for o in spec.options where matches(o) { return o }
            for o in CommandSpec.globalOptions where matches(o) { return o }
            return nil
        }
        // For an error's suggestions only: built on every parse, it was a fifth of a one-shot's
        // parse.
        var longNames: [String] {
            (spec.options + CommandSpec.globalOptions + [CommandSpec.helpOption]).flatMap { [$0.name] + $0.aliases }.map { "--" + $0 }
        }
        var out = ParsedArguments()
        var i = 0

        func record(_ option: OptionSpec, as shown: String, inline: String?) throws(IceboxError) {
            guard let placeholder = option.value else {
                if inline != nil { throw usage("\(shown) takes no value", spec) }
                out.set(flag: option.name)
                return
            }
            let value: String
            if let inline {
                value = inline
            } else {
                guard i < args.count else { throw usage("\(shown) needs a value (\(placeholder))", spec) }
                value = args[i]
                i += 1
            }
            if !option.repeatable && out.value(option.name) != nil { throw usage("\(shown) given twice", spec) }
            out.add(value, for: option.name)
        }

        while i < args.count {
            let arg = args[i]
            i += 1
            if arg == "--" {
                if spec.commandAfterPositionals != nil { out.command = Array(args[i...]) } else { out.positionals += args[i...] }
                break
            }
            if arg == "--help" || arg == "-h" { out.helpRequested = true; continue }
            if arg.hasPrefix("--") && arg.count > 2 {
                var name = String(arg.dropFirst(2))
                var inline: String?
                if let eq = name.firstIndex(of: "=") {
                    inline = String(name[name.index(after: eq)...])
                    name = String(name[..<eq])
                }
                guard let option = option(where: { $0.name == name || $0.aliases.contains(name) }) else {
                    throw usage("unknown option --\(name) for '\(spec.name)'" + Suggestions.didYouMean("--" + name, among: longNames), spec)
                }
                try record(option, as: "--\(name)", inline: inline)
                continue
            }
            if arg.hasPrefix("-") && arg.count > 1 && Int(arg) == nil {
                // One or more one-letter options: -a, -aq, -n 20, -n20.
                var rest = arg.dropFirst()
                while let letter = rest.first {
                    rest = rest.dropFirst()
                    if letter == "h" { out.helpRequested = true; continue }
                    guard let option = option(where: { $0.short == letter }) else {
                        // "-all" is more likely a long option with one dash than -a -l -l.
                        let long = "--" + arg.dropFirst()
                        let hint =
                            arg.count <= 2
                            ? "" : longNames.contains(long) ? "; did you mean '\(long)'?" : Suggestions.didYouMean(long, among: longNames)
                        throw usage("unknown option \(arg.count > 2 ? arg : "-\(letter)") for '\(spec.name)'" + hint, spec)
                    }
                    if option.value != nil && !rest.isEmpty {
                        try record(option, as: "-\(letter)", inline: String(rest.hasPrefix("=") ? rest.dropFirst() : rest))
                        rest = ""
                    } else {
                        try record(option, as: "-\(letter)", inline: nil)
                    }
                }
                continue
            }
            out.positionals.append(arg)
            if let n = spec.commandAfterPositionals, out.positionals.count > n {
                out.command = [out.positionals.removeLast()] + args[i...]
                break
            }
        }
        // Checked after the loop, so `doctor extra --help` still shows the help.
        if let limit = spec.operands, out.positionals.count > limit.max, !out.helpRequested {
            throw usage("unexpected argument '\(out.positionals[limit.max])': '\(spec.name)' takes \(limit.text)", spec)
        }
        return out
    }

    static func usage(_ message: String, _ spec: CommandSpec) -> IceboxError {
        IceboxError(.usage, message, hint: "usage: \(spec.usage); see icebox \(spec.name) --help")
    }

    /// A value that must be one of a few words: the word, or a usage error that suggests the closest.
    static func choice(_ text: String, option: String, among choices: [String]) throws(IceboxError) -> String {
        if choices.contains(text) { return text }
        throw IceboxError(
            .usage, "invalid --\(option) '\(text)'" + Suggestions.didYouMean(text, among: choices),
            hint: "use " + choices.dropLast().joined(separator: ", ") + " or " + (choices.last ?? ""))
    }
}

import IceboxCore

/// One option a command accepts: `--name VALUE` (or `--name=VALUE`), or a flag.
struct OptionSpec: Sendable {
    let name: String
    let value: String?  // the placeholder shown in help; nil for a flag
    let help: String
    var repeatable = false
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

    var help: String {
        var text = "usage: \(usage)\n\n\(summary)\n"
        if !details.isEmpty { text += "\n\(details)\n" }
        if !options.isEmpty {
            text += "\noptions:\n"
            for o in options + [OptionSpec(name: "help", value: nil, help: "show this help")] {
                let left = "  --\(o.name)" + (o.value.map { " \($0)" } ?? "")
                let pad = left.count < 28 ? String(repeating: " ", count: 28 - left.count) : "\n" + String(repeating: " ", count: 28)
                text += left + pad + o.help + "\n"
            }
        }
        return text
    }
}

/// What the parser found.
struct ParsedArguments {
    var values: [String: [String]] = [:]
    var flags: Set<String> = []
    var positionals: [String] = []
    var command: [String] = []
    var helpRequested = false

    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }
    func flag(_ name: String) -> Bool { flags.contains(name) }
}

enum ArgumentParser {
    static func parse(_ args: [String], spec: CommandSpec) throws(IceboxError) -> ParsedArguments {
        var out = ParsedArguments()
        var i = 0
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
                guard let option = spec.options.first(where: { $0.name == name }) else {
                    throw usage("unknown option --\(name) for '\(spec.name)'", spec)
                }
                if option.value != nil {
                    let value: String
                    if let inline {
                        value = inline
                    } else {
                        guard i < args.count else { throw usage("--\(name) needs a value (\(option.value!))", spec) }
                        value = args[i]
                        i += 1
                    }
                    if !option.repeatable && out.values[name] != nil { throw usage("--\(name) given twice", spec) }
                    out.values[name, default: []].append(value)
                } else {
                    if inline != nil { throw usage("--\(name) takes no value", spec) }
                    out.flags.insert(name)
                }
                continue
            }
            if arg.hasPrefix("-") && arg.count > 1 && Int(arg) == nil {
                throw usage("unknown option \(arg) for '\(spec.name)'", spec)
            }
            out.positionals.append(arg)
            if let n = spec.commandAfterPositionals, out.positionals.count > n {
                out.command = [out.positionals.removeLast()] + args[i...]
                break
            }
        }
        return out
    }

    static func usage(_ message: String, _ spec: CommandSpec) -> IceboxError {
        IceboxError(.usage, message, hint: "usage: \(spec.usage); see icebox \(spec.name) --help")
    }

    static func duration(_ text: String?, option: String, default fallback: UInt64) throws(IceboxError) -> UInt64 {
        guard let text else { return fallback }
        guard let value = DurationText.parse(text) else {
            throw IceboxError(.usage, "invalid duration '\(text)' for --\(option)", hint: "write it like 250ms, 5s, 1.5s, 1m30s or 100us")
        }
        return value
    }
}

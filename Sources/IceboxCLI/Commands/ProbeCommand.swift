import IceboxCore
import IceboxSystem

/// icebox probe tcp:PORT|http:URL: checks once whether a local server answers, with the
/// same in-process checks the daemon runs for --ready (here waited on with poll).
enum ProbeCommand: IceboxCommand {
    static let name = "probe"
    static let spec = CommandSpec(
        name: name, usage: "icebox probe tcp:PORT|http:URL [--timeout DUR]",
        summary: "check once whether a local server answers (exit 0) or not (exit 1)",
        options: [OptionSpec(name: "timeout", value: "DUR", help: "how long the check may take (default 1s)")],
        operands: Operands(max: 1, text: "one target"))

    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        guard args.positionals.count == 1, let mode = ReadyMode.parse(args.positionals[0]) else {
            let why = args.positionals.first.flatMap(ReadyMode.parseProblem).map { $0 + "; " } ?? ""
            throw ArgumentParser.usage("\(why)probe takes one target: tcp:PORT or http:http://127.0.0.1:PORT/PATH", spec)
        }
        let timeout = try args.duration("timeout") ?? 1_000_000_000
        let deadline = Clock.monotonicNanos() + timeout
        switch mode {
        case .tcp(let port):
            if ReadinessCheck.tcp(port: port, deadline: deadline) { return 0 }
            Output.err("icebox probe: nothing accepted a connection on 127.0.0.1:\(port)")
            return 1
        case .http(let text):
            guard let url = HTTPURL(text) else { throw ArgumentParser.usage("\(text) is not an http:// URL", spec) }
            let outcome = ReadinessCheck.http(url, deadline: deadline)
            if outcome.isReady { return 0 }
            Output.err(TerminalText.escaped("icebox probe: \(text): \(outcome)"))  // the answer is the server's
            return 1
        default:
            throw ArgumentParser.usage("probe checks tcp:PORT or http:URL", spec)
        }
    }
}

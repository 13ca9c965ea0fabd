import IceboxCore
import IceboxSystem

/// icebox probe tcp:PORT|http:URL: checks once whether a server answers. The daemon runs it
/// for --ready http:URL; scripts can use it too.
enum ProbeCommand: IceboxCommand {
    static let spec = CommandSpec(
        name: "probe", usage: "icebox probe tcp:PORT|http:URL [--timeout DUR]",
        summary: "check once whether a local server answers (exit 0) or not (exit 1)",
        options: [OptionSpec(name: "timeout", value: "DUR", help: "how long the check may take (default 1s)")])

    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        guard args.positionals.count == 1, let mode = ReadyMode.parse(args.positionals[0]) else {
            throw ArgumentParser.usage("probe takes one target: tcp:PORT or http:http://127.0.0.1:PORT/PATH", spec)
        }
        let timeout = try ArgumentParser.duration(args.value("timeout"), option: "timeout", default: 1_000_000_000)
        let deadline = Clock.monotonicNanos() + timeout
        switch mode {
        case .tcp(let port): return ReadinessCheck.tcp(port: port, deadline: deadline) ? 0 : 1
        case .http(let url): return ReadinessCheck.http(url, deadline: deadline) ? 0 : 1
        default: throw ArgumentParser.usage("probe checks tcp:PORT or http:URL", spec)
        }
    }
}

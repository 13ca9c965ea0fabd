import IceboxCore

/// icebox compact NAME...: reclaim suspended apps' memory without killing them.
enum CompactCommand: IceboxCommand {
    static let name = "compact"
    static let spec = CommandSpec(
        name: name, usage: "icebox compact NAME... [--mode pageout|cold]",
        summary: "reclaim a suspended app's memory without killing it (process_madvise or memory.reclaim)",
        options: [
            OptionSpec(
                name: "mode", value: "pageout|cold",
                help: "pageout: reclaim now; cold: mark inactive, reclaimed under pressure (default: the policy's)")
        ]
            + LifecycleRequest.common)

    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        try LifecycleRequest.send(args, spec: spec) { names throws(IceboxError) in
            .compact(names: names, mode: try args.choice("mode", hint: "use pageout or cold"))
        }
    }
}

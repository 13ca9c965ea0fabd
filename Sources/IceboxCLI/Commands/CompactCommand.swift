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
        if args.positionals.isEmpty { throw ArgumentParser.usage("compact needs at least one app name", spec) }
        for name in args.positionals { try AppName.validate(name) }
        var mode: CompactionMode?
        if let text = args.value("mode") {
            guard let m = CompactionMode(rawValue: text) else {
                throw IceboxError(.usage, "invalid --mode '\(text)'", hint: "use pageout or cold")
            }
            mode = m
        }
        let request = ControlRequest.compact(names: args.positionals, mode: mode)
        var client = LaunchArguments.client(args)
        return try client.perform(request)
    }
}

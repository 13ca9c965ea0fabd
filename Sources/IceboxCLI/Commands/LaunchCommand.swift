import IceboxCore

/// icebox launch NAME -- CMD: start an app detached; its output goes to a log file.
enum LaunchCommand: IceboxCommand {
    static let name = "launch"
    static let spec = CommandSpec(
        name: name, usage: "icebox launch [OPTIONS] NAME [--] CMD [ARG...]",
        summary: "launch CMD as the app NAME, detached (output: icebox logs NAME)",
        options: LaunchArguments.options, commandAfterPositionals: 1,
        details: "Returns once the app is launched, or ready with --ready. Durations: 250ms, 5s, 1m30s, 100us.")

    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        guard let name = args.positionals.first else { throw ArgumentParser.usage("launch needs a NAME and a command", spec) }
        let options = try LaunchArguments.build(name: name, nameIsDefault: false, command: args.command, args, attached: false)
        var client = LaunchArguments.client(args)
        return try client.perform(.launch(options: options))
    }
}

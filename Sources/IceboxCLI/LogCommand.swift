import Glibc
import IceboxCore
import IceboxSystem

/// icebox log [NAME]: the timed event log, read from the state directory (no daemon needed).
enum LogCommand: IceboxCommand {
    static let spec = CommandSpec(
        name: "log", usage: "icebox log [NAME] [--json] [--follow]",
        summary: "the timed event log, all apps or one",
        options: [
            OptionSpec(name: "json", value: nil, help: "one JSON object a line, with duration_ns"),
            OptionSpec(name: "follow", value: nil, help: "keep printing new events"),
        ])

    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        let name = args.positionals.first
        if let name { try AppName.validate(name) }
        let paths = IceboxPaths.fromEnvironment(ProcessEnvironment.dictionary)
        let json = args.flag("json")
        try FileFollower.print(paths.eventLog, follow: args.flag("follow"), missingIsEmpty: true) { line in
            guard let event = JSONLines.decode(Event.self, line) else { return }
            if let name, event.app != name { return }
            Output.out(json ? line : event.humanLine)
        }
        return 0
    }
}

/// icebox logs NAME: a detached app's own output.
enum LogsCommand: IceboxCommand {
    static let spec = CommandSpec(
        name: "logs", usage: "icebox logs NAME [--follow]",
        summary: "a detached app's own output (stdout and stderr)",
        options: [OptionSpec(name: "follow", value: nil, help: "keep printing new output")])

    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        guard let name = args.positionals.first else { throw ArgumentParser.usage("logs needs an app name", spec) }
        try AppName.validate(name)
        let paths = IceboxPaths.fromEnvironment(ProcessEnvironment.dictionary)
        let path = paths.appLog(name)
        if !FileIO.exists(path) {
            throw IceboxError(
                .failure, "no output recorded for '\(name)' (\(path) does not exist)",
                hint: "only apps started with icebox launch have a log; icebox run prints to the terminal")
        }
        try FileFollower.print(path, follow: args.flag("follow"), missingIsEmpty: false) { Output.out($0) }
        return 0
    }
}

extension FileFollower {
    /// Hands a file's lines to `emit` and, with `follow`, every line appended later, until
    /// the process is ended (or the directory goes away).
    static func print(_ path: String, follow: Bool, missingIsEmpty: Bool, _ emit: (String) -> Void) throws(IceboxError) {
        let follower = try FileFollower(path: path, startAtEnd: false, follow: follow, missingIsEmpty: missingIsEmpty)
        guard follow else { return follower.readLines(emit) }
        // A reader that goes away (| head) must not kill us mid-line.
        Signals.block([SIGPIPE])
        try follower.follow(stop: nil, emit)
    }
}

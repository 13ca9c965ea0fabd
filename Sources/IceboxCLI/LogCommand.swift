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
        try FileFollower.print(path: paths.eventLog, follow: args.flag("follow"), missingIsEmpty: true) { line in
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
        try FileFollower.print(path: path, follow: args.flag("follow"), missingIsEmpty: false) { Output.out($0) }
        return 0
    }
}

/// Prints a file line by line and, with follow, waits for more through inotify.
enum FileFollower {
    static func print(path: String, follow: Bool, missingIsEmpty: Bool, _ emit: (String) -> Void) throws(IceboxError) {
        var fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 && !(missingIsEmpty && errno == ENOENT) {
            throw IceboxError("read", SystemError("open", path: path))
        }
        var pending: [UInt8] = []
        func drain() {
            guard fd >= 0 else { return }
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                pending.append(contentsOf: chunk[0..<n])
                while let nl = pending.firstIndex(of: 10) {
                    emit(String(decoding: pending[..<nl], as: UTF8.self))
                    pending.removeSubrange(...nl)
                }
            }
        }
        drain()
        guard follow else { if fd >= 0 { close(fd) }; return }
        // Watch the directory, so a log file that does not exist yet is picked up when it appears.
        let inotify = inotify_init1(Int32(IN_CLOEXEC))
        let dir = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        // The state directory may not exist before the first daemon ran: make it, as the daemon would.
        try? FileIO.makeDirectories(dir.isEmpty ? "." : dir, mode: 0o700)
        _ = inotify_add_watch(inotify, dir.isEmpty ? "." : dir, UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO))
        Signals.block([SIGPIPE])
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
            if n < 0 && errno != EINTR { break }
            if fd < 0 { fd = open(path, O_RDONLY | O_CLOEXEC) }
            drain()
        }
    }
}

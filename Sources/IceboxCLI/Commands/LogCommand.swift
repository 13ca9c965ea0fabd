import Glibc
import IceboxCore
import IceboxSystem

/// icebox log [NAME]: the timed event log, read from the state directory (no daemon needed).
enum LogCommand: IceboxCommand {
    static let name = "log"
    static let spec = CommandSpec(
        name: name, usage: "icebox log [NAME] [-j] [-f] [-n N] [--since WHEN] [--until WHEN]",
        summary: "the timed event log, all apps or one",
        options: [
            OptionSpec(name: "json", value: nil, help: "one JSON object a line, with duration_ns", short: "j"),
            OptionSpec(name: "follow", value: nil, help: "keep printing new events (Ctrl-C ends it: exit 130)", short: "f"),
            OptionSpec(name: "lines", value: "N", help: "only the last N events (then new ones, with -f)", short: "n", aliases: ["tail"]),
            OptionSpec(name: "since", value: "WHEN", help: "events from then on: a duration ago (10m), HH:MM[:SS] today, or RFC 3339"),
            OptionSpec(name: "until", value: "WHEN", help: "events up to then (same forms as --since)"),
        ],
        details: """
            Text lines show local time, with the date for events not from today.
            The rotated generations (events.jsonl.1 …) are read too, oldest first; -n reads from the end.
            """,
        operands: Operands(max: 1, text: "at most one app name"))

    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        let name = args.positionals.first
        if let name { try AppName.validate(name) }
        let lines = try count(args.value("lines"), option: "lines")
        let now = Clock.wallNanos()
        let since = try bound(args.value("since"), option: "since", now: now)
        let until = try bound(args.value("until"), option: "until", now: now)
        let follow = args.flag("follow")
        if follow && until != nil {
            throw ArgumentParser.usage("--until and --follow together would wait for nothing: give one of them", spec)
        }
        let paths = IceboxPaths.fromEnvironment(ProcessEnvironment.value)
        let selection = EventSelection(name: name, since: since, until: until, json: args.flag("json"), color: Output.colorOut)
        let code = try FileFollower.run(
            path: paths.eventLog, follow: follow, missingIsEmpty: true, mapped: true, lines: lines, select: selection.render,
            caughtUp: {
                if !selection.sawApp, let name, !FileIO.exists(paths.registryRecord(name)), follow {
                    Output.err("icebox: no app named '\(name)' has run yet; waiting for its events")
                }
            })
        if !follow, !selection.sawApp, let name, !FileIO.exists(paths.registryRecord(name)) {
            throw IceboxError(
                .failure, "no app named '\(name)' has run here (no events for it in \(paths.eventLog))",
                hint: "icebox ps --all lists the apps icebox knows")
        }
        return code
    }

    static func count(_ text: String?, option: String) throws(IceboxError) -> Int? {
        guard let text else { return nil }
        guard let n = Int(text), n >= 0 else {
            throw IceboxError(.usage, "--\(option) needs a whole number of lines (0 or more), not '\(text)'")
        }
        return n
    }

    static func bound(_ text: String?, option: String, now: Int64) throws(IceboxError) -> Int64? {
        guard let text else { return nil }
        guard let value = TimeText.parseBound(text, nowWallNanos: now, offset: TimeText.localOffset) else {
            throw IceboxError(
                .usage, "invalid --\(option) '\(text)'",
                hint:
                    "give a duration meaning that long ago (10m, 1h30m), a time today (14:30 or 14:30:15) or an RFC 3339 time (2026-11-30T14:30:00Z)"
            )
        }
        return value
    }
}

/// icebox logs NAME: a detached app's own output.
enum LogsCommand: IceboxCommand {
    static let name = "logs"
    static let spec = CommandSpec(
        name: name, usage: "icebox logs NAME [-f] [-n N]",
        summary: "a detached app's own output (stdout and stderr)",
        options: [
            OptionSpec(name: "follow", value: nil, help: "keep printing new output (Ctrl-C ends it: exit 130)", short: "f"),
            OptionSpec(name: "lines", value: "N", help: "only the last N lines (then new ones, with -f)", short: "n", aliases: ["tail"]),
        ],
        operands: Operands(max: 1, text: "one app name"))

    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        guard let name = args.positionals.first else { throw ArgumentParser.usage("logs needs an app name", spec) }
        try AppName.validate(name)
        let lines = try LogCommand.count(args.value("lines"), option: "lines")
        let paths = IceboxPaths.fromEnvironment(ProcessEnvironment.value)
        let path = paths.appLog(name)
        if !FileIO.exists(path) {
            // An adopted app was started by someone else: its output goes where it went then.
            if let text = try? FileIO.read(paths.registryRecord(name)), let record = JSONLines.decode(AppRecord.self, text),
                record.isAdopted
            {
                throw IceboxError(
                    .failure, "\(name) was adopted (pid \(record.pid)), not launched: icebox does not capture its output",
                    hint: "its output goes where it went before the adoption (ls -l /proc/\(record.pid)/fd/1 shows where)")
            }
            throw IceboxError(
                .failure, "no output recorded for '\(name)' (\(path) does not exist)",
                hint: "only apps started with icebox launch have a log; icebox run prints to the terminal")
        }
        // On a terminal the app's output has its control characters escaped (TerminalText,
        // tabs and newlines kept): an app must not drive the reader's terminal. Piped, it is
        // exact, for grep and files.
        let onTerminal = isatty(1) == 1
        return try FileFollower.run(
            path: path, follow: args.flag("follow"), missingIsEmpty: false, mapped: false, lines: lines,
            select: {
                let text = String(decoding: $0, as: UTF8.self)
                return onTerminal ? TerminalText.escaped(text, keepingLayout: true) : text
            }, caughtUp: {})
    }
}

extension FileFollower {
    /// Prints the log's history across its older generations (`mapped`: through a mapping, for
    /// the event log, never truncated): every line `select` turns into text, oldest first, or
    /// the last `lines` (read backwards, newest generation first, until there are enough);
    /// calls `caughtUp`; with `follow` prints new lines until SIGINT, SIGTERM or SIGHUP (128 +
    /// the signal, as a shell reports it), stdout's reader going away (0, as `tail -f | head`)
    /// or the log's removal. Without follow it returns 0.
    static func run(
        path: String, follow: Bool, missingIsEmpty: Bool, mapped: Bool, lines: Int?, select: (UnsafeRawBufferPointer) -> String?,
        caughtUp: () -> Void
    ) throws(IceboxError) -> Int32 {
        let stopSignals = [SIGINT, SIGTERM, SIGHUP]
        var signalFD: Int32 = -1
        if follow {
            // Blocked before the first read, so a Ctrl-C at any moment ends the follow cleanly;
            // a reader that goes away (| head) must not kill us mid-line.
            Signals.block(stopSignals + [SIGPIPE])
            do { signalFD = try Signals.signalFD(stopSignals) } catch { throw IceboxError("set up signals", error) }
        }
        defer { if signalFD >= 0 { close(signalFD) } }
        // With -n the file is read backwards from its end as it is now; the follow goes on from
        // there.
        let follower = try FileFollower(path: path, startAtEnd: lines != nil, follow: follow, missingIsEmpty: missingIsEmpty)
        if let refused = follower.pollingBecause {
            Output.err(
                "icebox: follow \(path): \(refused); looking every \(Double(FileFollower.pollIntervalNanos) / 1e9) s instead"
                    + " (raise fs.inotify.max_user_instances or max_user_watches to follow without delay)")
        }
        var out = OutputBatch()
        let older = follower.openOlderGenerations()
        defer { for fd in older { close(fd) } }
        if let lines {
            var newestFirst: [String] = []
            func enough(_ line: UnsafeRawBufferPointer) -> Bool {
                if let text = select(line) { newestFirst.append(text) }
                return newestFirst.count < lines
            }
            var more = lines > 0
            if more, follower.descriptor >= 0 { more = LogLines.backward(fd: follower.descriptor, end: follower.startOffset, enough) }
            for fd in older.reversed() where more { more = LogLines.backward(fd: fd, end: Int64(lseek(fd, 0, SEEK_END)), enough) }
            for text in newestFirst.reversed() { out.add(text) }
        } else {
            func add(_ line: UnsafeRawBufferPointer) { if let text = select(line) { out.add(text) } }
            for fd in older {
                _ =
                    (mapped ? LogLines.forwardMapped(fd: fd, from: 0, end: .final, add) : nil)
                    ?? LogLines.forward(fd: fd, from: 0, end: .final, add)
            }
            follower.readLineBytes(mapped: mapped, add)
        }
        out.flush()
        caughtUp()
        guard follow else { return 0 }
        // stdout is watched for POLLERR: a pipe whose reader has gone reports it (for a file
        // or a terminal, with no events asked for, poll reports nothing).
        var stops = [pollfd(fd: signalFD, events: Int16(POLLIN), revents: 0)]
        if fcntl(1, F_GETFD) >= 0 { stops.append(pollfd(fd: 1, events: 0, revents: 0)) }
        let stopped = try follower.follow(stopOn: stops) { line in
            var line = line
            if let text = line.withUTF8({ select(UnsafeRawBufferPointer($0)) }) { Output.out(text) }
        }
        return stopped == 0 ? 128 + (Signals.drain(signalFD: signalFD).first ?? SIGTERM) : 0
    }
}

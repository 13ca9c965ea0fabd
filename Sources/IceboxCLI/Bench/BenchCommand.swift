import Glibc
import IceboxCore
import IceboxSystem

/// icebox bench -- CMD: hot resume against cold start for one program, with hyperfine's
/// statistics and exports.
enum BenchCommand: IceboxCommand {
    static let name = "bench"
    static let spec = CommandSpec(
        name: name, usage: "icebox bench [OPTIONS] [--] CMD [ARG...]",
        summary: "measure hot resume against cold start (and freeze, thaw, suspend, relaunch) for CMD",
        options: [
            OptionSpec(name: "runs", value: "N", help: "measured runs (default 10)"),
            OptionSpec(name: "warmup", value: "N", help: "runs before measuring, not counted (default 1)"),
            OptionSpec(name: "hold", value: "DUR", help: "how long the app stays frozen each run (default 1s)"),
            OptionSpec(
                name: "evict-every", value: "K", help: "every K runs, evict and relaunch (cold start after eviction; default 5, 0: never)"),
            OptionSpec(
                name: "to-disk", value: nil,
                help: "each run also suspends again, checkpoints to disk with criu and resumes from there (implies --pid-namespace)"),
            OptionSpec(name: "export-json", value: "FILE", help: "write every figure and sample as JSON in hyperfine's schema (seconds)"),
            OptionSpec(name: "export-csv", value: "FILE", help: "write the summary as CSV, one row per phase (seconds)"),
            OptionSpec(name: "export-markdown", value: "FILE", help: "write the summary as a Markdown table"),
            OptionSpec(name: "style", value: "auto|basic|full|nocolor|color|none", help: "output style, as hyperfine's (default auto)"),
            OptionSpec(name: "quiet", value: nil, help: "print the results only: no progress, no warnings"),
            OptionSpec(name: "name", value: "NAME", help: "the app's name while measured (default bench)"),
        ] + LaunchArguments.options,
        commandAfterPositionals: 0,
        details: """
            Each run launches CMD cold and waits until it is ready, suspends it (notice and
            grace as configured), holds it frozen, resumes it and waits until it is ready
            again. With --to-disk, it then suspends it again, evicts it to disk (a criu dump),
            holds it there and resumes it from disk until ready: the disk restore, beside hot
            and cold, with the image size and the memory the dump freed. Readiness is checked
            the same way for cold, hot and disk: --ready tcp:PORT, http:URL, cmd:PROBE, or
            notify (READY=1 after launch, and again after the --foreground-signal that a resume
            sends).
            """)

    /// The most --runs, --warmup or --evict-every may be: far more runs than anyone waits
    /// for (each takes at least --hold), and small enough that no count arithmetic overflows.
    static let maximumCount = 1_000_000

    static func count(_ args: ParsedArguments, _ name: String, default fallback: Int, minimum: Int) throws(IceboxError) -> Int {
        guard let text = args.value(name) else { return fallback }
        guard let n = Int(text), n >= minimum else {
            throw IceboxError(.usage, "--\(name) needs a whole number from \(minimum) to \(maximumCount), not '\(text)'")
        }
        if n > maximumCount { throw IceboxError(.usage, "--\(name) \(text) is too many: at most \(maximumCount)") }
        return n
    }

    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        let command = args.command + args.positionals
        if command.isEmpty { throw ArgumentParser.usage("bench needs a command", spec) }
        let runs = try count(args, "runs", default: 10, minimum: 1)
        let warmup = try count(args, "warmup", default: 1, minimum: 0)
        let evictEvery = try count(args, "evict-every", default: 5, minimum: 0)
        let hold = try args.duration("hold") ?? 1_000_000_000
        let styleText = args.value("style") ?? BenchStyle.auto.rawValue
        guard let style = BenchStyle(rawValue: styleText) else {
            throw IceboxError(
                .usage, "unknown --style '\(styleText)'", hint: "use auto, basic, full, nocolor, color or none")
        }
        let quiet = args.flag("quiet")
        // Built before a daemon is asked for a name, so usage errors come first.
        var options = try LaunchArguments.build(
            name: args.value("name") ?? "bench", nameIsDefault: false, command: command, args, attached: false)
        if args.value("name") == nil { options.name = try BenchSession.defaultName(LaunchArguments.client(args)) }
        let toDisk = args.flag("to-disk")
        // Only the root of its own PID namespace can be checkpointed (its pids free at restore).
        if toDisk { options.pidNamespace = true }
        if case .notify = options.ready, options.foregroundSignal == nil {
            throw IceboxError(
                .usage, "--ready notify needs --foreground-signal SIG",
                hint: "the app must say READY=1 again after a resume, on that signal")
        }
        Signals.block([SIGINT, SIGTERM, SIGHUP])
        let signalFD: Int32
        do { signalFD = try Signals.signalFD([SIGINT, SIGTERM, SIGHUP]) } catch { throw IceboxError("set up signals", error) }
        var session = BenchSession(
            client: LaunchArguments.client(args, readsLineEvents: true), options: options, holdNanos: hold, signalFD: signalFD)
        session.toDisk = toDisk
        defer { session.cleanUp() }
        let progress = !quiet && style.showsProgress(terminal: isatty(2) == 1)

        var measured: [BenchSession.Run] = []
        var measuringSince: UInt64 = 0
        let started = Clock.monotonicNanos()
        let total = warmup + runs
        do {
            for i in 0..<total {
                let counted = i >= warmup
                if counted && measuringSince == 0 { measuringSince = Clock.monotonicNanos() }
                if progress {
                    let label = counted ? "run \(i - warmup + 1)/\(runs)" : "warm-up \(i + 1)/\(warmup)"
                    let last =
                        measured.last.map {
                            "cold \(DurationText.format($0.cold)), hot \(DurationText.format($0.hot))"
                                + ($0.disk.map { ", disk \(DurationText.format($0.restore))" } ?? "")
                        } ?? ""
                    let eta = ProgressBar.remaining(elapsedNanos: Clock.monotonicNanos() - started, done: i, total: total)
                    let line = ProgressBar.line(
                        label: label, done: i, total: total, detail: last, etaNanos: eta, columns: Terminal.columns(2) ?? 80)
                    Output.writeAll(2, "\r\u{1B}[K" + line)
                }
                let relaunch = counted && evictEvery > 0 && (i - warmup + 1) % evictEvery == 0
                let sample = try session.run(relaunchAfterEviction: relaunch)
                if counted { measured.append(sample) }
            }
        } catch {
            if progress { Output.writeAll(2, "\r\u{1B}[K") }
            guard let signal = session.interruption.signal else { throw error }
            // Interrupted: evict the app now (as the defer would), say so, and exit as a
            // shell reports a command a signal ended: 128 + the signal (130 for Ctrl-C).
            session.cleanUp()
            Output.err(
                "icebox bench: interrupted by \(Signals.name(of: signal)) after \(measured.count) of \(Plural.count(runs, "run")); the app was evicted"
            )
            return 128 + signal
        }
        if progress { Output.writeAll(2, "\r\u{1B}[K") }

        let report = BenchReport(
            options: options, runs: runs, warmup: warmup, evictEvery: evictEvery, holdNanos: hold, measured: measured,
            events: BenchReport.events(of: options.name, since: measuringSince, in: session.client.paths))
        if style.printsResults {
            for line in report.lines(colour: style.usesColour(auto: Output.colorOut)) { Output.out(line) }
            // One summary of everything worth a second look, after the results.
            if !quiet { for line in BenchReport.warningSummary(report.warnings()) { Output.err(line) } }
        }
        try report.export(json: args.value("export-json"), csv: args.value("export-csv"), markdown: args.value("export-markdown"))
        return 0
    }
}

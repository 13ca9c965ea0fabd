import FoundationEssentials
import Glibc
import IceboxCore
import IceboxSystem

/// How much `icebox bench` shows while it runs, with hyperfine's --style values: auto (full
/// on a terminal, else basic), basic (no progress line, no colour), full (both), nocolor
/// (progress only), color (colour only), none (nothing but errors; exports still written).
enum BenchStyle: String, CaseIterable, Sendable {
    case auto, basic, full, nocolor, color, none

    func showsProgress(terminal: Bool) -> Bool {
        switch self {
        case .auto: return terminal
        case .full, .nocolor: return true
        case .basic, .color, .none: return false
        }
    }

    /// Whether the results are coloured; `auto` takes what `--color` and NO_COLOR decided
    /// for stdout (`Output.colorOut`).
    func usesColour(auto: Bool) -> Bool {
        switch self {
        case .auto: return auto
        case .full, .color: return true
        case .basic, .nocolor, .none: return false
        }
    }

    var printsResults: Bool { self != .none }
}

/// One measured quantity of a benchmark: its samples, and the CPU time the app used in it.
struct BenchPhase: Sendable {
    var id: String
    var title: String
    var span: String
    var summary: Summary
    /// The app's CPU time per run in this phase, on average; nil where icebox cannot
    /// attribute it (the daemon's and the kernel's work) or the app had no v2 cgroup.
    var cpu: CPUTime?
    var indented = false  // shown under the line before it (grace used, under suspend)

    var label: String { "\(title) (\(span))" }  // "Cold start (launch → ready)", for exports
}

/// The figures of one `icebox bench`: what it prints and what it exports.
struct BenchReport {
    var command: [String]
    var backend: String
    var ready: String
    var readyOnExec: Bool
    var runs: Int
    var warmup: Int
    var evictEvery: Int
    var holdNanos: UInt64
    var phases: [BenchPhase]
    var speedupMedian: Double?
    /// Cold start's median over the restore's from disk (--to-disk): below 1 the restore is
    /// slower (a large heap read back can take longer than a fresh start).
    var diskSpeedupMedian: Double?
    /// Per run, in bytes (--to-disk; empty without): the checkpoint's images, and the memory
    /// it freed (the app's, before the dump).
    var imageBytes: [UInt64] = []
    var memoryFreedBytes: [UInt64] = []

    init(
        options: LaunchOptions, runs: Int, warmup: Int, evictEvery: Int, holdNanos: UInt64, measured: [BenchSession.Run],
        events: [Event]
    ) {
        command = options.command
        backend = options.backend.rawValue
        ready = options.ready.description
        if case .exec = options.ready { readyOnExec = true } else { readyOnExec = false }
        (self.runs, self.warmup, self.evictEvery, self.holdNanos) = (runs, warmup, evictEvery, holdNanos)
        // The daemon's own figures for the measured runs, from its event log.
        let freezes = events.filter { $0.kind == .freeze }
        let notices = events.filter { $0.kind == .notice }
        var suspends: [UInt64] = []
        var graces: [UInt64] = []
        for freeze in freezes {
            guard let notice = notices.last(where: { $0.monotonicNanos <= freeze.monotonicNanos }) else { continue }
            suspends.append(freeze.monotonicNanos - notice.monotonicNanos)
            graces.append(freeze.monotonicNanos - notice.monotonicNanos - (freeze.durationNanos ?? 0))
        }
        if let backend = events.first(where: { $0.kind == .spawn })?.backend { self.backend = backend.rawValue }
        func phase(_ id: String, _ title: String, _ span: String, _ samples: [UInt64], cpu: [CPUTime?] = [], indented: Bool = false)
            -> BenchPhase?
        {
            guard let summary = Summary(samples: samples) else { return nil }
            return BenchPhase(id: id, title: title, span: span, summary: summary, cpu: Self.mean(cpu), indented: indented)
        }
        phases = [
            phase("cold_start", "Cold start", "launch → ready", measured.map(\.cold), cpu: measured.map(\.coldCPU)),
            phase("hot_resume", "Hot resume", "resume → ready", measured.map(\.hot), cpu: measured.map(\.hotCPU)),
            phase(
                "disk_restore", "Disk restore", "resume → ready", measured.compactMap(\.disk?.restore),
                cpu: measured.compactMap(\.disk).map(\.restoreCPU)),
            phase("freeze", "Freeze", "write → frozen", freezes.compactMap(\.durationNanos)),
            phase("thaw", "Thaw", "write → thawed", events.filter { $0.kind == .thaw }.compactMap(\.durationNanos)),
            phase("suspend", "Suspend", "notice → frozen", suspends, cpu: measured.map(\.suspendCPU)),
            phase("grace", "grace used", "notice → freeze", graces, indented: true),
            phase("checkpoint", "Checkpoint", "evict → on disk", measured.compactMap(\.disk?.checkpoint)),
            phase(
                "restore", "Restore", "criu restore",
                events.filter { $0.kind == .restore && $0.to == .active }.compactMap(\.durationNanos)),
            phase(
                "relaunch_after_eviction", "Relaunch after eviction", "evict → ready", measured.compactMap(\.relaunch),
                cpu: measured.filter { $0.relaunch != nil }.map(\.relaunchCPU)),
        ].compactMap { $0 }
        // The cold start's median over another phase's, rounded to 1/scale.
        func speedup(of id: String, scale: Double) -> Double? {
            guard let cold = phases.first(where: { $0.id == "cold_start" }), let other = phases.first(where: { $0.id == id }),
                other.summary.median > 0
            else { return nil }
            return (Double(cold.summary.median) / Double(other.summary.median) * scale).rounded() / scale
        }
        speedupMedian = speedup(of: "hot_resume", scale: 10)
        diskSpeedupMedian = speedup(of: "disk_restore", scale: 100)
        imageBytes = measured.compactMap(\.disk?.imageBytes)
        memoryFreedBytes = measured.compactMap(\.disk?.memoryFreedBytes)
    }

    static func mean(_ values: [UInt64]) -> UInt64? {
        values.isEmpty ? nil : values.reduce(0) { $0.saturatingAdd($1) } / UInt64(values.count)
    }

    static func diskRatio(_ ratio: Double) -> String {
        ratio >= 1
            ? "Disk restore is \(DurationText.formatFixed(ratio, 1))× faster than cold start"
            : "Disk restore is \(DurationText.formatFixed(1 / ratio, 1))× slower than cold start"
    }

    /// What the checkpoints wrote and freed, on average: "Disk: image 7.7 MiB, 8.2 MiB of
    /// memory freed (mean of 10 checkpoints)."; nil without --to-disk.
    var diskLine: String? {
        guard let image = Self.mean(imageBytes) else { return nil }
        let freed = Self.mean(memoryFreedBytes).map { ", \(SizeText.format($0)) of memory freed" } ?? ", memory freed unknown"
        return "Disk: image \(SizeText.format(image))\(freed) (mean of \(Plural.count(imageBytes.count, "checkpoint")))."
    }

    /// The mean of the runs that have a figure; nil if none has.
    static func mean(_ values: [CPUTime?]) -> CPUTime? {
        let known = values.compactMap { $0 }
        guard !known.isEmpty else { return nil }
        let n = UInt64(known.count)
        return CPUTime(user: known.map(\.user).reduce(0, +) / n, system: known.map(\.system).reduce(0, +) / n)
    }

    /// The app's events since `since`, oldest first: the log is read from its end (across
    /// its rotated generations) back to the first event before `since`.
    static func events(of app: String, since: UInt64, in paths: IceboxPaths) -> [Event] {
        var newestFirst: [Event] = []
        LogGenerations(path: paths.eventLog).readBackward { line in
            guard let event = JSONLines.decode(Event.self, String(decoding: line, as: UTF8.self)) else { return true }
            if event.monotonicNanos < since { return false }
            if event.app == app { newestFirst.append(event) }
            return true
        }
        return newestFirst.reversed()
    }

    static func d(_ n: UInt64) -> String { DurationText.format(n) }

    var commandLine: String { command.map(\.shellQuoted).joined(separator: " ") }

    /// For the terminal: columns aligned, the grace under the suspend; with `colour`, the
    /// figures painted as hyperfine paints them (the mean bold green, σ green, the range cyan
    /// and magenta) and the titles bold. Control characters in the text are escaped before
    /// any colour goes in, so the lines are printed as they are.
    func lines(colour: Bool = false) -> [String] {
        func paint(_ style: Style, _ text: String) -> String { style.paint(text, colour) }
        let titles = phases.map { ($0.indented ? "  " : "") + TerminalText.escaped($0.title) }
        let titleWidth = titles.map(\.count).max() ?? 0
        let spanWidth = phases.map { $0.span.count + 2 }.max() ?? 0
        var out = zip(phases, titles).map { p, title in
            let s = p.summary
            let span = "(\(TerminalText.escaped(p.span)))"
            return paint(.bold, title) + String(repeating: " ", count: titleWidth - title.count + 1) + span
                + String(repeating: " ", count: spanWidth - span.count)
                + "  \(paint(.boldGreen, Self.d(s.mean))) ± \(paint(.green, Self.d(s.stddev)))"
                + "   median \(Self.d(s.median))   [\(paint(.cyan, Self.d(s.min))) … \(paint(.magenta, Self.d(s.max)))]"
                + "   p95 \(Self.d(s.p95))   \(Plural.count(s.samples.count, "run"))"
        }
        if let speedup = speedupMedian {
            out.append(
                "Hot resume is \(paint(.boldGreen, DurationText.formatFixed(speedup, 1) + "×")) faster than cold start (median, same run)."
            )
        }
        if let ratio = diskSpeedupMedian { out.append(Self.diskRatio(ratio) + " (median, same run).") }
        if let diskLine { out.append(TerminalText.escaped(diskLine)) }
        return out
    }

    /// Everything worth a second look, one line per kind of problem, for one summary at the end.
    func warnings() -> [String] {
        var out: [String] = []
        if readyOnExec {
            out.append(
                "with --ready exec, 'ready' only means execve returned: use tcp:, http:, notify or cmd: to time when the app answers")
        }
        func list(_ items: [String]) -> String {
            items.count <= 1 ? items.joined() : items.dropLast().joined(separator: ", ") + " and " + items.last!
        }
        let outliers = phases.filter { $0.summary.outliers > 0 }
        if !outliers.isEmpty {
            out.append(
                "statistical outliers (modified Z-score > 3.5) in "
                    + list(outliers.map { "\($0.title.lowercased()) (\($0.summary.outliers) of \($0.summary.samples.count))" })
                    + ": another process may have interfered; rerun on a quiet machine")
        }
        let noisy = phases.filter { $0.summary.samples.count >= 3 && $0.summary.coefficientOfVariation > 0.5 }
        if !noisy.isEmpty {
            out.append(
                "σ above half the mean in "
                    + list(noisy.map { "\($0.title.lowercased()) (\(Int(($0.summary.coefficientOfVariation * 100).rounded()))%)" })
                    + ": too noisy to trust one figure; use more --runs or a quieter machine")
        }
        if runs < 5 { out.append("only \(Plural.count(runs, "run")): use --runs 10 or more for figures you can compare") }
        if let hot = phases.first(where: { $0.id == "hot_resume" }), hot.summary.median < 200_000 {
            out.append("hot resume takes under 200 µs: close to the cost of the measurement itself (a socket round trip to the daemon)")
        }
        return out
    }

    static func warningSummary(_ warnings: [String]) -> [String] {
        switch warnings.count {
        case 0: return []
        case 1: return ["icebox bench: warning: \(warnings[0])"]
        default: return ["icebox bench: \(warnings.count) warnings:"] + warnings.map { "  - \($0)" }
        }
    }

    func export(json: String?, csv: String?, markdown: String?) throws(IceboxError) {
        func write(_ path: String, _ text: String) throws(IceboxError) {
            // The directory's links followed once; the file itself is made by an exclusive
            // create under a random name and renamed into place, never written through a link.
            guard let resolved = FileIO.resolvingDirectory(path) else {
                throw IceboxError(.usage, "export \(path): no such directory", hint: "give a file in an existing directory")
            }
            do { try FileIO.writeAtomically(resolved, text, mode: 0o644) } catch { throw IceboxError("export", error) }
        }
        if let json { try write(json, jsonText()) }
        if let csv { try write(csv, csvText()) }
        if let markdown { try write(markdown, markdownText()) }
    }

    // MARK: - JSON, in hyperfine's schema

    /// One result as hyperfine writes it (times in seconds; stddev null with one sample),
    /// plus icebox's own keys, which hyperfine's scripts do not read.
    struct HyperfineResult: Encodable {
        var command: String
        var mean: Double
        var stddev: NullWhenAbsent
        var median: Double
        var user: Double
        var system: Double
        var min: Double
        var max: Double
        var times: [Double]
        var exitCodes: [Int32]
        var phase: String
        var p95: Double
        var outliers: Int
        var cpuMeasured: Bool
        /// Only on the disk rows (checkpoint and disk_restore): means in bytes.
        var imageBytes: UInt64? = nil
        var memoryFreedBytes: UInt64? = nil
    }

    struct DiskSizes: Encodable {  // --to-disk: every run's and the means, in bytes
        var imageBytes: [UInt64]
        var imageBytesMean: UInt64?
        var memoryFreedBytes: [UInt64]
        var memoryFreedBytesMean: UInt64?
    }

    struct Context: Encodable {  // what the benchmark was, under a key of its own
        var version: String
        var command: [String]
        var backend: String
        var ready: String
        var runs: Int
        var warmup: Int
        var evictEvery: Int
        var hold: Double
        var speedupMedian: Double?
        // Only with --to-disk (nil is left out), so a plain benchmark's keys do not change.
        var diskSpeedupMedian: Double?
        var disk: DiskSizes?
        var units: String
    }

    /// hyperfine writes `"stddev": null` for one sample, where synthesized coding would leave
    /// an absent optional out.
    struct NullWhenAbsent: Encodable {
        var value: Double?
        func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
    }

    struct HyperfineExport: Encodable {
        var results: [HyperfineResult]
        var icebox: Context
    }

    static func seconds(_ nanos: UInt64) -> Double { Double(nanos) / 1e9 }

    var hyperfineExport: HyperfineExport {
        let results = phases.map { p in
            let s = p.summary
            var result = HyperfineResult(
                command: "\(p.label): \(commandLine)", mean: Self.seconds(s.mean),
                stddev: NullWhenAbsent(value: s.samples.count > 1 ? Self.seconds(s.stddev) : nil), median: Self.seconds(s.median),
                user: Self.seconds(p.cpu?.user ?? 0), system: Self.seconds(p.cpu?.system ?? 0), min: Self.seconds(s.min),
                max: Self.seconds(s.max), times: s.samples.map(Self.seconds),
                // A step that fails stops the benchmark (as hyperfine without
                // --ignore-failure), so every sample is of one that succeeded.
                exitCodes: s.samples.map { _ in 0 }, phase: p.id, p95: Self.seconds(s.p95), outliers: s.outliers,
                cpuMeasured: p.cpu != nil)
            if p.id == "checkpoint" || p.id == "disk_restore" {
                result.imageBytes = Self.mean(imageBytes)
                result.memoryFreedBytes = Self.mean(memoryFreedBytes)
            }
            return result
        }
        let disk =
            imageBytes.isEmpty
            ? nil
            : DiskSizes(
                imageBytes: imageBytes, imageBytesMean: Self.mean(imageBytes), memoryFreedBytes: memoryFreedBytes,
                memoryFreedBytesMean: Self.mean(memoryFreedBytes))
        return HyperfineExport(
            results: results,
            icebox: Context(
                version: IceboxMain.version, command: command, backend: backend, ready: ready, runs: runs, warmup: warmup,
                evictEvery: evictEvery, hold: Self.seconds(holdNanos), speedupMedian: speedupMedian,
                diskSpeedupMedian: diskSpeedupMedian, disk: disk,
                units:
                    "times in seconds; user and system: the app's CPU time in the phase (its cgroup's cpu.stat), mean per run, 0 where cpu_measured is false"
            ))
    }

    func jsonText() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // hyperfine's keys are snake_case ("exit_codes"); the types keep Swift's names.
        encoder.keyEncodingStrategy = .convertToSnakeCase
        guard let data = try? encoder.encode(hyperfineExport) else { return "{}\n" }
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    // MARK: - CSV and Markdown

    /// Exact seconds from nanoseconds: 79500 → 0.0000795, no float noise.
    static func decimalSeconds(_ nanos: UInt64) -> String {
        let whole = nanos / 1_000_000_000
        var fraction = String(nanos % 1_000_000_000)
        fraction = String(repeating: "0", count: 9 - fraction.count) + fraction
        while fraction.last == "0" { fraction.removeLast() }
        return fraction.isEmpty ? "\(whole)" : "\(whole).\(fraction)"
    }

    /// A CSV field (RFC 4180): quoted when it holds a comma, a quote, a line break or
    /// leading or trailing blanks; quotes doubled.
    static func csvField(_ text: String) -> String {
        let needsQuotes = text.contains { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" } || text.first == " " || text.last == " "
        return needsQuotes ? "\"" + text.replacing("\"", with: "\"\"") + "\"" : text
    }

    /// One row per phase, like hyperfine's CSV, each time column in seconds (its header
    /// says so); user_s and system_s empty where unknown, stddev_s with one sample.
    func csvText() -> String {
        var rows = [["command", "phase", "mean_s", "stddev_s", "median_s", "user_s", "system_s", "min_s", "max_s", "p95_s", "runs"]]
        for p in phases {
            let s = p.summary
            rows.append([
                "\(p.label): \(commandLine)", p.id, Self.decimalSeconds(s.mean),
                s.samples.count > 1 ? Self.decimalSeconds(s.stddev) : "", Self.decimalSeconds(s.median),
                p.cpu.map { Self.decimalSeconds($0.user) } ?? "", p.cpu.map { Self.decimalSeconds($0.system) } ?? "",
                Self.decimalSeconds(s.min), Self.decimalSeconds(s.max), Self.decimalSeconds(s.p95), String(s.samples.count),
            ])
        }
        return rows.map { $0.map(Self.csvField).joined(separator: ",") }.joined(separator: "\r\n") + "\r\n"
    }

    static func markdownCell(_ text: String) -> String {  // pipes escaped, no line breaks
        text.replacing("\\", with: "\\\\").replacing("|", with: "\\|").replacing("\n", with: " ")
    }

    static func markdownCode(_ text: String) -> String {  // inline code that survives backticks in the text
        let longest = text.split(whereSeparator: { $0 != "`" }).map(\.count).max() ?? 0  // backticks in a row
        let fence = String(repeating: "`", count: longest + 1)
        let pad = text.first == "`" || text.last == "`" ? " " : ""
        return fence + pad + text + pad + fence
    }

    /// One unit for every time column, the one that suits the smallest mean (so the fastest
    /// phase keeps its digits), stated in each header.
    var markdownUnit: (name: String, nanos: Double, digits: Int) {
        let smallest = phases.map(\.summary.mean).min() ?? 0
        if smallest < 1_000_000 { return ("µs", 1e3, 1) }
        if smallest < 1_000_000_000 { return ("ms", 1e6, 3) }
        return ("s", 1e9, 3)
    }

    func markdownText() -> String {
        let unit = markdownUnit
        func v(_ nanos: UInt64) -> String { DurationText.formatFixed(Double(nanos) / unit.nanos, unit.digits) }
        let u = "[\(unit.name)]"
        var text = "Benchmark of \(Self.markdownCode(commandLine)) with `icebox bench`: backend \(Self.markdownCell(backend)), "
        text += "ready \(Self.markdownCode(ready)), \(Plural.count(runs, "run")) after \(warmup) warm-up.\n\n"
        text += "| Phase | Mean \(u) | σ \(u) | Median \(u) | Min \(u) | Max \(u) | p95 \(u) | Runs |\n"
        text += "|:---|---:|---:|---:|---:|---:|---:|---:|\n"
        for p in phases {
            let s = p.summary
            let cells = [
                Self.markdownCell(p.label), v(s.mean), s.samples.count > 1 ? v(s.stddev) : "", v(s.median), v(s.min), v(s.max), v(s.p95),
                String(s.samples.count),
            ]
            text += "| " + cells.joined(separator: " | ") + " |\n"
        }
        if let speedup = speedupMedian {
            text += "\nHot resume is \(DurationText.formatFixed(speedup, 1))× faster than cold start (median).\n"
        }
        if let ratio = diskSpeedupMedian { text += "\n" + Self.diskRatio(ratio) + " (median).\n" }
        if let diskLine { text += "\n" + diskLine + "\n" }
        return text
    }
}

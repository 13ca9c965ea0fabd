import Glibc
import IceboxCore
import IceboxSystem

/// The figures of one `icebox bench`: what it prints and what it exports.
struct BenchReport: Codable {
    var command: [String]
    var backend: String
    var ready: String
    var runs: Int
    var warmup: Int
    var results: [Summary]
    var speedupMedian: Double?

    enum CodingKeys: String, CodingKey {
        case command, backend, ready, runs, warmup, results
        case speedupMedian
    }

    init(options: LaunchOptions, runs: Int, warmup: Int, measured: [BenchSession.Run], events: [Event]) {
        command = options.command
        backend = options.backend.rawValue
        ready = options.ready.description
        self.runs = runs
        self.warmup = warmup
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
        results = [
            Summary(name: "cold_start", label: "Cold start   (launch → ready)", samples: measured.map(\.cold)),
            Summary(name: "hot_resume", label: "Hot resume   (resume → ready)", samples: measured.map(\.hot)),
            Summary(name: "freeze", label: "Freeze       (write → frozen)", samples: freezes.compactMap(\.durationNanos)),
            Summary(
                name: "thaw", label: "Thaw         (write → thawed)",
                samples: events.filter { $0.kind == .thaw }.compactMap(\.durationNanos)),
            Summary(name: "suspend", label: "Suspend      (notice → frozen)", samples: suspends),
            Summary(name: "grace", label: "  grace used (notice → freeze)", samples: graces),
            Summary(
                name: "relaunch_after_eviction", label: "Relaunch after eviction (evict → ready)", samples: measured.compactMap(\.relaunch)),
        ].compactMap { $0 }
        if let cold = results.first(where: { $0.name == "cold_start" }), let hot = results.first(where: { $0.name == "hot_resume" }),
            hot.median > 0
        {
            speedupMedian = (Double(cold.median) / Double(hot.median) * 10).rounded() / 10
        }
    }

    static func events(of app: String, since: UInt64, in paths: IceboxPaths) -> [Event] {
        let text = (try? FileIO.read(paths.eventLog)) ?? ""
        return text.split(separator: "\n").compactMap { JSONLines.decode(Event.self, String($0)) }
            .filter { $0.app == app && $0.monotonicNanos >= since }
    }

    static func d(_ n: UInt64) -> String { DurationText.format(n) }

    func lines() -> [String] {
        let width = results.map(\.label.count).max() ?? 0
        var out = results.map { s in
            let label = s.label + String(repeating: " ", count: width - s.label.count)
            return
                "\(label)  \(Self.d(s.mean)) ± \(Self.d(s.stddev))   median \(Self.d(s.median))   [\(Self.d(s.min)) … \(Self.d(s.max))]   p95 \(Self.d(s.p95))   \(s.samples.count) runs"
        }
        if let speedup = speedupMedian {
            out.append("Hot resume is \(DurationText.formatFixed(speedup, 1))× faster than cold start (median, same run).")
        }
        return out
    }

    func warnings() -> [String] {
        var out: [String] = []
        for s in results where s.outliers > 0 {
            out.append(
                "\(s.name): \(s.outliers) statistical outlier\(s.outliers == 1 ? "" : "s") (modified Z-score > 3.5); another process may have interfered — rerun on a quiet machine"
            )
        }
        for s in results where s.samples.count >= 3 && s.coefficientOfVariation > 0.5 {
            out.append(
                "\(s.name): σ is \(Int(s.coefficientOfVariation * 100))% of the mean: too noisy to trust one figure; use more --runs or a quieter machine"
            )
        }
        if runs < 5 { out.append("only \(runs) runs: use --runs 10 or more for figures you can compare") }
        if let hot = results.first(where: { $0.name == "hot_resume" }), hot.median < 200_000 {
            out.append("hot resume takes under 200 µs: close to the cost of the measurement itself (a socket round trip to the daemon)")
        }
        return out
    }

    func export(json: String?, csv: String?, markdown: String?) throws(IceboxError) {
        func write(_ path: String, _ text: String) throws(IceboxError) {
            do { try FileIO.writeAtomically(path, text, mode: 0o644) } catch { throw IceboxError("export", error) }
        }
        if let json { try write(json, JSONLines.encode(self) + "\n") }
        if let csv {
            var text = "name,label,mean_ns,stddev_ns,median_ns,min_ns,max_ns,p95_ns,runs\n"
            for s in results {
                let label = s.label.trimmingCharacters(in: " ")
                text += "\(s.name),\"\(label)\",\(s.mean),\(s.stddev),\(s.median),\(s.min),\(s.max),\(s.p95),\(s.samples.count)\n"
            }
            try write(csv, text)
        }
        if let markdown {
            var text = "| measurement | mean ± σ | median | min … max | p95 | runs |\n|---|---|---|---|---|---|\n"
            for s in results {
                text +=
                    "| \(s.label.trimmingCharacters(in: " ")) | \(Self.d(s.mean)) ± \(Self.d(s.stddev)) | \(Self.d(s.median)) | \(Self.d(s.min)) … \(Self.d(s.max)) | \(Self.d(s.p95)) | \(s.samples.count) |\n"
            }
            if let speedup = speedupMedian {
                text += "\nHot resume is \(DurationText.formatFixed(speedup, 1))× faster than cold start (median).\n"
            }
            try write(markdown, text)
        }
    }
}

import IceboxCore

/// The progress line `icebox bench` keeps rewriting on a terminal:
/// "run 3/10  [██████░░░░░░░░░░░░░░]  cold 132 ms, hot 1.16 ms  ETA 14s".
enum ProgressBar {
    /// The line, cut to fit `columns` (a line that wraps could no longer be rewritten with \r).
    static func line(label: String, done: Int, total: Int, detail: String, etaNanos: UInt64?, columns: Int) -> String {
        let width = columns < 70 ? 10 : 20
        let filled = total > 0 ? min(width, max(0, done) * width / total) : 0
        let bar = "[" + String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled) + "]"
        var text = "\(label)  \(bar)"
        if !detail.isEmpty { text += "  \(detail)" }
        text += "  ETA " + (etaNanos.map(eta) ?? "…")
        return text.count < columns ? text : String(text.prefix(max(0, columns - 1)))
    }

    /// What is left, at the pace so far; nil before the first step is done.
    static func remaining(elapsedNanos: UInt64, done: Int, total: Int) -> UInt64? {
        guard done > 0, total >= done else { return nil }
        return elapsedNanos / UInt64(done) * UInt64(total - done)
    }

    /// Whole seconds: 14s, 2m05s, 1h03m.
    static func eta(_ nanos: UInt64) -> String {
        let s = (nanos + 500_000_000) / 1_000_000_000
        if s < 60 { return "\(s)s" }
        if s < 3600 { return "\(s / 60)m" + (s % 60 < 10 ? "0" : "") + "\(s % 60)s" }
        return "\(s / 3600)h" + ((s % 3600) / 60 < 10 ? "0" : "") + "\((s % 3600) / 60)m"
    }
}

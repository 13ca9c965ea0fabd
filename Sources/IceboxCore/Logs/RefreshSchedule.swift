/// When a file rewritten on change is next due: at once after a quiet spell, else `intervalNanos`
/// after the last write. A burst costs one write per interval, and its last change always lands.
/// The daemon's loop sleeps until `due`, a deadline like the others.
struct RefreshSchedule: Sendable, Equatable {
    let intervalNanos: UInt64
    private(set) var lastWrite: UInt64?
    /// When the next write is due (monotonic ns); nil: nothing changed since the last one.
    private(set) var due: UInt64?

    init(intervalNanos: UInt64) {
        self.intervalNanos = intervalNanos
    }

    mutating func changed(now: UInt64) {
        guard due == nil else { return }
        due = max(now, lastWrite.map { $0.saturatingAdd(intervalNanos) } ?? now)
    }

    /// The write was made (or tried) at `now`: the next change waits for the interval.
    mutating func wrote(now: UInt64) {
        lastWrite = now
        due = nil
    }
}

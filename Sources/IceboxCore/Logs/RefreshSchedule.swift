/// When a file rewritten on change is next due. After a quiet spell a change is written at once;
/// within `intervalNanos` of the last write it waits for the interval's end. So a burst of changes
/// costs one write per interval, and the last change of a burst always lands (the write it waits
/// for comes after it). The daemon's loop sleeps until `due`: a deadline like the others, never a
/// sleep.
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

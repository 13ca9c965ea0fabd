import Glibc

/// Notify datagrams dropped since the last line logged about them, the last sender, and when the
/// next such line may be written (monotonic ns): a flood from strangers (not the app's processes,
/// or no app's on the shared socket) must not grow the event log (a line each: 29 MB in 10 s).
struct NotifyDrops {
    static let logIntervalNanos: UInt64 = 1_000_000_000

    private(set) var count = 0
    private(set) var lastSender: pid_t = 0
    private var logAt: UInt64 = 0

    /// When the lines held back must be logged (a loop deadline); nil when none are.
    var dueAt: UInt64? { count > 0 ? logAt : nil }

    /// Counts a dropped datagram from `pid`; true when a line is due now.
    mutating func drop(from pid: pid_t, now: UInt64) -> Bool {
        count += 1
        lastSender = pid
        return now >= logAt
    }

    /// What to log now (the count and the last sender), starting the next interval; nil when
    /// nothing was dropped since the last line.
    mutating func take(now: UInt64) -> (count: Int, sender: pid_t)? {
        guard count > 0 else { return nil }
        defer {
            count = 0
            logAt = now.saturatingAdd(Self.logIntervalNanos)
        }
        return (count, lastSender)
    }

    /// The log line's words for what `take` returned.
    static func describe(_ count: Int, sender: pid_t) -> String {
        count == 1
            ? "a message from pid \(sender)" : "\(count) messages (logged at most once a second; the last from pid \(sender))"
    }
}

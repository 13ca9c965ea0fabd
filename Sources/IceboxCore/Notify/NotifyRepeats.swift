/// What an app's own notify messages may cost the event log and the registry. An app may send as
/// often as it likes, and an event line (STOPPING=1, WATCHDOG=trigger, EXTEND_TIMEOUT_USEC) or a
/// record write (STATUS=) per message made 106k lines in 10 s, pushing every other app's history
/// out of the rotated log, or 126 MB of records in 5 s. So, per app:
///
/// - a line of each kind is written at most once a second; what the second holds back is counted
///   and said in one line when it ends (a loop deadline), as `NotifyDrops` does;
/// - a change to the record that the app makes (STATUS=, a grace it extends) is kept at once (`ps`
///   shows it) and written at most every `recordIntervalNanos`, the latest of a burst at its end.
///
/// A value the lifecycle keeps: every decision takes `now`, so it is tested without a clock.
struct NotifyRepeats: Sendable, Equatable {
    /// The lines an app can make the daemon write by repeating a message.
    enum Kind: Int, CaseIterable, Sendable {
        /// STOPPING=1.
        case stopping
        /// The watchdog firing with `--watchdog-action log` (WATCHDOG=trigger, or a missed ping).
        case watchdog
        /// EXTEND_TIMEOUT_USEC= during the grace.
        case extend
        /// WATCHDOG_USEC= below the least interval icebox keeps.
        case watchdogInterval
        /// STATUS=: no line of its own; a flood of changes is said once a second.
        case status
    }

    static let lineIntervalNanos: UInt64 = 1_000_000_000
    static let recordIntervalNanos: UInt64 = 250_000_000
    /// STATUS= changes folded into one second past which the log says so: a progress line a
    /// few times a second is an app's right and writes nothing; a loop of sendto is a flood.
    static let statusFloodCount = 100

    /// Per kind: lines held back since the last one, and when the next may be written.
    private var held = [Int](repeating: 0, count: Kind.allCases.count)
    private var lineAt = [UInt64](repeating: 0, count: Kind.allCases.count)
    /// A record change waits to be written at this time; nil: none waits.
    private(set) var recordDue: UInt64?
    /// No record change is written before this (the last one's time + the interval).
    private var recordAt: UInt64 = 0

    /// When `take` or `recordDue` next has something to do; nil when nothing waits.
    var dueAt: UInt64? {
        var due = recordDue
        // STATUS= changes are counted in silence until they make a flood: a few a second never wake
        // the loop.
        for kind in Kind.allCases where held[kind.rawValue] > (kind == .status ? Self.statusFloodCount - 1 : 0) {
            due = due.earlier(lineAt[kind.rawValue])
        }
        return due
    }

    /// A message of `kind` that writes a line: true when the line may be written now; false
    /// when it is held back (counted for the summary).
    mutating func line(_ kind: Kind, now: UInt64) -> Bool {
        let k = kind.rawValue
        if held[k] == 0 && now >= lineAt[k] {
            lineAt[k] = now.saturatingAdd(Self.lineIntervalNanos)
            return true
        }
        held[k] += 1
        return false
    }

    /// The app changed its record (STATUS=, an extended grace): true when it is to be written
    /// now; else it is written when `recordDue` passes (`recordWrite`).
    mutating func recordChanged(now: UInt64, status: Bool) -> Bool {
        if recordDue == nil && now >= recordAt {
            recordAt = now.saturatingAdd(Self.recordIntervalNanos)
            return true
        }
        recordDue = max(recordAt, now)
        if status {
            // Folded into a later write: counted within a second, for the line that says a flood
            // came; a second that ended short of one starts again. One that made a flood is left
            // for `take` to say: under a flood the socket is read before the loop's deadline work,
            // so a reset here would lose every summary.
            let k = Kind.status.rawValue
            if now >= lineAt[k] && held[k] < Self.statusFloodCount {
                held[k] = 0
                lineAt[k] = now.saturatingAdd(Self.lineIntervalNanos)
            }
            held[k] += 1
        }
        return false
    }

    /// True when a held record change is due at `now` (and so written now).
    mutating func recordWrite(now: UInt64) -> Bool {
        guard let due = recordDue, due <= now else { return false }
        recordDue = nil
        recordAt = now.saturatingAdd(Self.recordIntervalNanos)
        return true
    }

    /// The record was written for any reason: a change that waited went with it.
    mutating func recordWritten() { recordDue = nil }

    /// The counts held back whose second has ended by `now` (all of them with `now` = .max,
    /// at the app's end), each kind's count reset; STATUS= only past `statusFloodCount`.
    mutating func take(now: UInt64) -> [(kind: Kind, count: Int)] {
        var due: [(kind: Kind, count: Int)] = []
        for kind in Kind.allCases {
            let k = kind.rawValue
            guard held[k] > 0, lineAt[k] <= now else { continue }
            let n = held[k]
            held[k] = 0
            lineAt[k] = now.saturatingAdd(Self.lineIntervalNanos)
            if kind != .status || n >= Self.statusFloodCount { due.append((kind, n)) }
        }
        return due
    }

    /// The summary line's words for `count` messages of `kind` held back.
    static func describe(_ kind: Kind, _ count: Int) -> String {
        let times = count == 1 ? "once more" : "\(count) more times"
        switch kind {
        case .stopping: return "STOPPING=1 sent \(times) (logged at most once a second)"
        case .watchdog: return "the watchdog fired \(times) (logged at most once a second)"
        case .extend: return "EXTEND_TIMEOUT_USEC sent \(times) (logged at most once a second)"
        case .watchdogInterval: return "WATCHDOG_USEC below the least interval sent \(times) (logged at most once a second)"
        case .status:
            return
                "STATUS= changed \(count) times in about a second: ps shows the latest; the registry writes it at most every \(DurationText.format(recordIntervalNanos))"
        }
    }
}

/// The daemon's counts from the events it logs (`DaemonMetrics`) and the metrics file kept from
/// them (`--metrics-file`, Daemon+Metrics): rewritten at most once a second after a change.
struct MetricsFile {
    let path: String?  // nil: none is kept
    var counts = DaemonMetrics()
    private var refresh = RefreshSchedule(intervalNanos: 1_000_000_000)
    private var failure: String?  // the last failure logged, not logged again on every retry

    init(path: String?) { self.path = path }

    var nextDeadline: UInt64? { path == nil ? nil : refresh.due }

    /// Takes an event's counts; the file is then due for a refresh.
    mutating func record(_ event: Event, now: @autoclosure () -> UInt64) {
        counts.record(event)
        if path != nil { refresh.changed(now: now()) }
    }

    mutating func wrote(now: UInt64) { refresh.wrote(now: now) }

    mutating func succeeded() { failure = nil }

    /// The write failed with `text`: true if it is to be logged (not the same as the last).
    mutating func failed(_ text: String) -> Bool {
        guard text != failure else { return false }
        failure = text
        return true
    }
}

/// The daemon's counts from the events it logs (`DaemonMetrics`) and the metrics file kept
/// fresh from them for node_exporter's textfile collector (`--metrics-file`): rewritten at
/// most once a second after a change, its failure logged once (Daemon+Metrics writes it).
struct MetricsFile {
    /// Where the file goes; nil: none is kept.
    let path: String?
    var counts = DaemonMetrics()
    private var refresh = RefreshSchedule(intervalNanos: 1_000_000_000)
    /// The last failure logged, so the same one is not logged on every retry.
    private var failure: String?

    init(path: String?) { self.path = path }

    /// When the file must be written next, if one is kept.
    var nextDeadline: UInt64? { path == nil ? nil : refresh.due }

    /// Takes an event's counts; the file is then due for a refresh.
    mutating func record(_ event: Event, now: @autoclosure () -> UInt64) {
        counts.record(event)
        if path != nil { refresh.changed(now: now()) }
    }

    mutating func wrote(now: UInt64) { refresh.wrote(now: now) }

    /// The write worked: a later failure is logged again.
    mutating func succeeded() { failure = nil }

    /// The write failed with `text`: true if it is to be logged (not the same as the last).
    mutating func failed(_ text: String) -> Bool {
        guard text != failure else { return false }
        failure = text
        return true
    }
}

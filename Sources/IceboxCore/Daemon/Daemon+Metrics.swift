import Glibc
import IceboxSystem

/// Metrics: the counts `DaemonMetrics` keeps from the logged events, the figures read when
/// they are asked for (`icebox metrics`), and the metrics file kept fresh for node_exporter's
/// textfile collector (`--metrics-file`).
extension Daemon {
    /// The metrics now, as text. Reads every app's memory and the daemon's /proc entries: a
    /// few file reads per app, done only when asked (a request, a due refresh of the file).
    func metricsText(_ format: MetricsFormat) -> String {
        let memory = memoryReader()
        // An app on disk is supervised too: it holds no memory, only its images.
        let snapshots =
            apps.values.map { AppMetricsSnapshot(name: $0.name, state: $0.record.state, memory: memory($0)) }
            + ended.values.filter { $0.state == .onDisk }.map { AppMetricsSnapshot(name: $0.name, state: .onDisk, memory: nil) }
        return MetricsExposition.render(metricsFile.counts.families(apps: snapshots, process: ProcessUsage.read()), format: format)
    }

    /// Writes the metrics file the way the textfile collector requires: a temporary file in
    /// the same directory, renamed over the old one, so a scrape never reads half a file.
    /// Readable by all (0644): node_exporter runs as a user of its own. A failure is logged
    /// once, not on every retry, and the next change tries again.
    func writeMetricsFile(now: UInt64) {
        guard let path = metricsFile.path else { return }
        metricsFile.wrote(now: now)
        do {
            try FileIO.writeAtomically(path, metricsText(.prometheus), mode: 0o644)
            metricsFile.succeeded()
        } catch {
            let text = "metrics file: \(error); the next change tries again"
            guard metricsFile.failed(text) else { return }
            log(.error, app: "-", pid: getpid(), text)
        }
    }
}

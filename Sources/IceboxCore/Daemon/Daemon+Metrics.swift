import Glibc
import IceboxSystem

/// Metrics: the counts kept from the logged events, the figures read when asked for
/// (`icebox metrics`), and the textfile-collector file kept fresh (`--metrics-file`).
extension Daemon {
    /// The metrics now, as text: a few file reads per app, done only when asked.
    func metricsText(_ format: MetricsFormat) -> String {
        let memory = memoryReader()
        // An app on disk is supervised too: it holds no memory, only its images.
        let snapshots =
            apps.values.map { AppMetricsSnapshot(name: $0.name, state: $0.record.state, memory: memory($0)) }
            + ended.values.filter { $0.state == .onDisk }.map { AppMetricsSnapshot(name: $0.name, state: .onDisk, memory: nil) }
        return MetricsExposition.render(metricsFile.counts.families(apps: snapshots, process: ProcessUsage.read()), format: format)
    }

    /// Writes the metrics file atomically (a scrape never reads half a file), readable by all
    /// (node_exporter runs as its own user). A failure is logged once; the next change retries.
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

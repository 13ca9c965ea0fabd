import IceboxSystem

/// An app as the metrics show it, read when they are asked for (its memory costs file reads,
/// so it is never tracked event by event).
package struct AppMetricsSnapshot: Sendable, Equatable {
    package var name: String
    package var state: AppState
    package var memory: AppMemoryReading?
}

/// What the daemon counts for `icebox metrics` and the metrics file: latency histograms and
/// counters fed from the events it logs (`record(_:)`, called from `Daemon.log`), plus the figures
/// read on demand (apps, memory, the daemon's own process) when the metrics are written. Counts
/// start at zero with each daemon, as Prometheus counters may: a restart shows in
/// `icebox_daemon_start_time_seconds`, and `rate()` handles the reset.
package struct DaemonMetrics: Sendable, Equatable {
    package private(set) var freeze: [BackendKind: LatencyHistogram] = [:]
    package private(set) var thaw: [BackendKind: LatencyHistogram] = [:]
    package private(set) var grace = LatencyHistogram()
    package private(set) var coldStart = LatencyHistogram()
    package private(set) var hotStart = LatencyHistogram()
    package private(set) var evictions: [EvictionReason.Kind: UInt64] = [:]
    /// Ended apps by how they ended: exited, terminated or evicted.
    package private(set) var exits: [AppState: UInt64] = [:]

    /// The states `icebox_apps` always shows (at zero too, so a query never finds nothing).
    package static let liveStates: [AppState] = [.launching, .active, .background, .suspended, .onDisk]
    package static let endedStates: [AppState] = [.exited, .terminated, .evicted]

    package init() {}

    /// Takes what an event counts, by its kind and structured fields (never its text).
    package mutating func record(_ event: Event) {
        switch event.kind {
        case .freeze:
            if let nanos = event.durationNanos, let backend = event.backend {
                freeze[backend, default: LatencyHistogram()].observe(nanos: nanos)
            }
            if let nanos = event.graceNanos { grace.observe(nanos: nanos) }
        case .thaw:
            // A thaw the lifecycle asked for (a resume) carries its backend; one done aside,
            // so a frozen app can act on SIGTERM, does not and is not a resume.
            if let nanos = event.durationNanos, let backend = event.backend {
                thaw[backend, default: LatencyHistogram()].observe(nanos: nanos)
            }
        case .ready:
            // Launch → ready is logged as the transition out of launching; resume → READY=1
            // has no transition (the app was already active).
            guard let nanos = event.durationNanos else { return }
            if event.from == .launching { coldStart.observe(nanos: nanos) } else { hotStart.observe(nanos: nanos) }
        case .exit, .evict:
            if let final = event.to, final.isEnded { exits[final, default: 0] += 1 }
        case .policy:
            if let kind = event.evictedFor { evictions[kind, default: 0] += 1 }
        default:
            break
        }
    }

    /// Every family, in a fixed order, from the counts and the figures read now.
    package func families(apps: [AppMetricsSnapshot], process: ProcessUsage) -> [MetricFamily] {
        let sorted = apps.sorted { $0.name < $1.name }
        return [
            .gauge(
                "icebox_apps", help: "Apps the daemon supervises, by lifecycle state.",
                Self.liveStates.map { state in
                    ([MetricLabel("state", state.rawValue)], .count(UInt64(apps.filter { $0.state == state }.count)))
                }),
            .gauge(
                "icebox_app_state", help: "Always 1, labelled with each live app's name and state.",
                sorted.map { ([MetricLabel("app", $0.name), MetricLabel("state", $0.state.rawValue)], .count(1)) }),
            .gauge(
                "icebox_app_memory_bytes", unit: "bytes",
                help: "Each live app's memory, from the best source the host has (see icebox(1), Memory per app).",
                sorted.compactMap { app in
                    app.memory.map { ([MetricLabel("app", app.name), MetricLabel("source", $0.source.rawValue)], .count($0.bytes)) }
                }),
            .histogram(
                "icebox_freeze_duration_seconds", help: "Freezes: from the request to the kernel's confirmation, by backend.",
                BackendKind.allCases.compactMap { b in freeze[b].map { ([MetricLabel("backend", b.rawValue)], $0) } }),
            .histogram(
                "icebox_thaw_duration_seconds", help: "Thaws for a resume: from the request to the kernel's confirmation, by backend.",
                BackendKind.allCases.compactMap { b in thaw[b].map { ([MetricLabel("backend", b.rawValue)], $0) } }),
            .histogram(
                "icebox_grace_duration_seconds",
                help: "Grace periods that ended in a freeze: from the background notice to READY=1, expiry or no notice.",
                [([], grace)]),
            .histogram(
                "icebox_cold_start_duration_seconds", help: "Cold starts: from launch to ready.", [([], coldStart)]),
            .histogram(
                "icebox_hot_start_duration_seconds", help: "Hot starts: from a resume to the app's READY=1.", [([], hotStart)]),
            .counter(
                "icebox_evictions", help: "Apps the memory policy evicted, by trigger.",
                EvictionReason.Kind.allCases.map { ([MetricLabel("reason", $0.rawValue)], .count(evictions[$0] ?? 0)) }),
            .counter(
                "icebox_app_exits", help: "Apps that ended, by how: exited on their own, terminated, or evicted (by request or policy).",
                Self.endedStates.map { ([MetricLabel("how", $0.rawValue)], .count(exits[$0] ?? 0)) }),
            .gauge(
                "icebox_daemon_open_fds", help: "Descriptors the daemon has open.",
                process.openDescriptors.map { [([], .count(UInt64($0)))] } ?? []),
            .gauge(
                "icebox_daemon_resident_memory_bytes", unit: "bytes", help: "The daemon's resident memory.",
                process.residentBytes.map { [([], .count($0))] } ?? []),
            .gauge(
                "icebox_daemon_start_time_seconds", unit: "seconds", help: "When the daemon started, in seconds since the epoch.",
                process.startTimeUnixNanos.map { [([], .seconds(nanos: $0))] } ?? []),
            .counter(
                "icebox_daemon_cpu_seconds", unit: "seconds", help: "CPU time the daemon has used, user and system.",
                process.cpuNanos.map { [([], .seconds(nanos: $0))] } ?? []),
        ]
    }
}

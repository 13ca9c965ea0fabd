import IceboxSystem
import Testing

@testable import IceboxCore

@Suite("Metrics: histograms, the text formats, what events count")
struct MetricsTests {
    @Test("a histogram's buckets are inclusive upper bounds, with +Inf above the last")
    func histogramBuckets() {
        var h = LatencyHistogram(boundsNanos: [1_000, 10_000])
        for nanos: UInt64 in [0, 1_000, 1_001, 10_000, 10_001, 5_000_000_000] { h.observe(nanos: nanos) }
        #expect(h.bucketCounts == [2, 2, 2])
        #expect(h.cumulativeCounts == [2, 4, 6])
        #expect(h.count == 6)
        #expect(h.sumNanos == 0 + 1_000 + 1_001 + 10_000 + 10_001 + 5_000_000_000)
    }

    @Test("the default buckets run from 50 µs to 60 s, ascending")
    func defaultBuckets() {
        let b = LatencyHistogram.defaultBoundsNanos
        #expect(b.first == 50_000 && b.last == 60_000_000_000)
        #expect(zip(b, b.dropFirst()).allSatisfy { $0 < $1 })
        #expect(b.contains(10_000_000_000))
    }

    @Test("a histogram's sum saturates instead of trapping")
    func histogramSumSaturates() {
        var h = LatencyHistogram()
        h.observe(nanos: .max)
        h.observe(nanos: 1)
        #expect(h.sumNanos == .max && h.count == 2)
    }

    @Test("values are exact decimals: integers, and nanoseconds as seconds")
    func valueText() {
        #expect(MetricValue.count(0).text == "0")
        #expect(MetricValue.count(18_446_744_073_709_551_615).text == "18446744073709551615")
        #expect(MetricValue.seconds(nanos: 50_000).text == "0.00005")
        #expect(MetricValue.seconds(nanos: 1_000_000_000).text == "1")
        #expect(MetricValue.seconds(nanos: 2_500_000_000).text == "2.5")
        #expect(MetricValue.seconds(nanos: 1).text == "0.000000001")
        #expect(MetricValue.seconds(nanos: 1_712_345_678_250_000_000).text == "1712345678.25")
        #expect(MetricValue.seconds(nanos: 0).text == "0")
    }

    @Test("label values escape backslash, double quote and line feed, and nothing else")
    func labelEscaping() {
        #expect(MetricsExposition.escapeLabelValue(#"a\b"#) == #"a\\b"#)
        #expect(MetricsExposition.escapeLabelValue(#"say "hi""#) == #"say \"hi\""#)
        #expect(MetricsExposition.escapeLabelValue("one\ntwo") == #"one\ntwo"#)
        #expect(MetricsExposition.escapeLabelValue("tab\there, é, {}=,") == "tab\there, é, {}=,")
        #expect(MetricsExposition.escapeLabelValue("\r\n") == "\r\\n")
    }

    @Test("HELP escapes double quotes only in OpenMetrics")
    func helpEscaping() {
        #expect(MetricsExposition.escapeHelp("a \"b\" \\ c\nd", format: .prometheus) == "a \"b\" \\\\ c\\nd")
        #expect(MetricsExposition.escapeHelp("a \"b\" \\ c\nd", format: .openMetrics) == "a \\\"b\\\" \\\\ c\\nd")
    }

    static let sampleFamilies: [MetricFamily] = [
        .gauge("x_apps", help: "Apps.", [([MetricLabel("app", "we\"b\n")], .count(2))]),
        .counter("x_exits", help: "Exits.", [([MetricLabel("how", "evicted")], .count(3))]),
        .histogram("x_freeze_duration_seconds", help: "Freezes.", [([], LatencyHistogram(boundsNanos: [1_000_000]))]),
    ]

    @Test("the Prometheus 0.0.4 text: counters named with _total in HELP and TYPE, no UNIT, no EOF")
    func prometheusText() {
        let text = MetricsExposition.render(Self.sampleFamilies, format: .prometheus)
        #expect(
            text == """
                # HELP x_apps Apps.
                # TYPE x_apps gauge
                x_apps{app="we\\"b\\n"} 2
                # HELP x_exits_total Exits.
                # TYPE x_exits_total counter
                x_exits_total{how="evicted"} 3
                # HELP x_freeze_duration_seconds Freezes.
                # TYPE x_freeze_duration_seconds histogram
                x_freeze_duration_seconds_bucket{le="0.001"} 0
                x_freeze_duration_seconds_bucket{le="+Inf"} 0
                x_freeze_duration_seconds_sum 0
                x_freeze_duration_seconds_count 0

                """)
    }

    @Test("OpenMetrics: counters typed without _total, UNIT lines, # EOF at the end")
    func openMetricsText() {
        let text = MetricsExposition.render(Self.sampleFamilies, format: .openMetrics)
        #expect(text.contains("# TYPE x_exits counter\nx_exits_total{how=\"evicted\"} 3\n"))
        #expect(text.contains("# TYPE x_freeze_duration_seconds histogram\n# UNIT x_freeze_duration_seconds seconds\n"))
        #expect(text.hasSuffix("x_freeze_duration_seconds_count 0\n# EOF\n"))
        #expect(!text.contains("# UNIT x_apps"))
    }

    func event(_ kind: EventKind, from: AppState? = nil, to: AppState? = nil, nanos: UInt64? = nil) -> Event {
        Event(
            app: "web", pid: 42, kind: kind, from: from, to: to, durationNanos: nanos, detail: "test",
            at: Instant(monotonicNanos: 1, wallNanos: 0))
    }

    @Test("events feed the histograms and counters by kind and structured fields")
    func recordEvents() {
        var m = DaemonMetrics()
        var freeze = event(.freeze, from: .background, to: .suspended, nanos: 80_000)
        freeze.backend = .cgroup2
        freeze.graceNanos = 700_000
        m.record(freeze)
        freeze.backend = .signal
        m.record(freeze)
        var thaw = event(.thaw, from: .suspended, to: .active, nanos: 90_000)
        thaw.backend = .cgroup2
        m.record(thaw)
        m.record(event(.thaw, nanos: 1_000_000))  // a thaw aside (for SIGTERM): no backend, not a resume
        m.record(event(.ready, from: .launching, to: .active, nanos: 116_000_000))
        m.record(event(.ready, nanos: 1_200_000))
        m.record(event(.exit, from: .active, to: .exited, nanos: 5))
        m.record(event(.exit, from: .active, to: .terminated, nanos: 5))
        m.record(event(.evict, from: .suspended, to: .evicted, nanos: 5))
        m.record(event(.policy, nanos: 5))  // "chosen for eviction": not an eviction done
        var evicted = event(.policy, nanos: 5)
        evicted.evictedFor = .maxSuspended
        m.record(evicted)
        m.record(event(.notice, from: .active, to: .background))

        #expect(m.freeze[.cgroup2]?.count == 1 && m.freeze[.signal]?.count == 1 && m.freeze[.cgroup1] == nil)
        #expect(m.freeze[.cgroup2]?.sumNanos == 80_000)
        #expect(m.grace.count == 2 && m.grace.sumNanos == 1_400_000)
        #expect(m.thaw[.cgroup2]?.count == 1 && m.thaw.count == 1)
        #expect(m.coldStart.count == 1 && m.coldStart.sumNanos == 116_000_000)
        #expect(m.hotStart.count == 1 && m.hotStart.sumNanos == 1_200_000)
        #expect(m.exits == [.exited: 1, .terminated: 1, .evicted: 1])
        #expect(m.evictions == [.maxSuspended: 1])
    }

    @Test("the families: every name, fixed labels at zero, apps sorted, missing /proc figures left out")
    func families() {
        var m = DaemonMetrics()
        var freeze = event(.freeze, nanos: 80_000)
        freeze.backend = .cgroup2
        m.record(freeze)
        let apps = [
            AppMetricsSnapshot(name: "web", state: .suspended, memory: AppMemoryReading(bytes: 4096, source: .memoryCurrent)),
            AppMetricsSnapshot(name: "db", state: .active, memory: nil),
        ]
        let families = m.families(apps: apps, process: ProcessUsage(openDescriptors: 7, cpuNanos: 30_000_000))
        #expect(
            families.map(\.name) == [
                "icebox_apps", "icebox_app_state", "icebox_app_memory_bytes", "icebox_freeze_duration_seconds",
                "icebox_thaw_duration_seconds", "icebox_grace_duration_seconds", "icebox_cold_start_duration_seconds",
                "icebox_hot_start_duration_seconds", "icebox_evictions", "icebox_app_exits", "icebox_daemon_open_fds",
                "icebox_daemon_resident_memory_bytes", "icebox_daemon_start_time_seconds", "icebox_daemon_cpu_seconds",
            ])
        let text = MetricsExposition.render(families, format: .prometheus)
        for line in [
            "icebox_apps{state=\"launching\"} 0", "icebox_apps{state=\"active\"} 1", "icebox_apps{state=\"suspended\"} 1",
            "icebox_app_state{app=\"db\",state=\"active\"} 1\nicebox_app_state{app=\"web\",state=\"suspended\"} 1",
            "icebox_app_memory_bytes{app=\"web\",source=\"memory.current\"} 4096",
            "icebox_freeze_duration_seconds_bucket{backend=\"cgroup2\",le=\"0.0001\"} 1",
            "icebox_freeze_duration_seconds_count{backend=\"cgroup2\"} 1",
            "icebox_grace_duration_seconds_count 0",
            "icebox_evictions_total{reason=\"pressure\"} 0", "icebox_evictions_total{reason=\"max_suspended\"} 0",
            "icebox_app_exits_total{how=\"evicted\"} 0",
            "icebox_daemon_open_fds 7", "icebox_daemon_cpu_seconds_total 0.03",
            "# TYPE icebox_daemon_resident_memory_bytes gauge\n# HELP icebox_daemon_start_time_seconds",
        ] {
            #expect(text.contains(line), "missing: \(line)")
        }
        #expect(!text.contains("app=\"db\",source"), "an app without a reading has no memory sample")
        #expect(!text.contains("backend=\"signal\""), "a backend never used has no series")
    }

    @Test("the metrics file schedule: at once after a quiet spell, then at most once an interval, the last change landing")
    func refreshSchedule() {
        var s = RefreshSchedule(intervalNanos: 1_000)
        #expect(s.due == nil)
        s.changed(now: 100)
        #expect(s.due == 100)
        s.wrote(now: 100)
        #expect(s.due == nil)
        s.changed(now: 300)  // within the interval: waits for its end
        #expect(s.due == 1_100)
        s.changed(now: 900)  // more changes before then: still one write
        #expect(s.due == 1_100)
        s.wrote(now: 1_100)
        s.changed(now: 5_000)  // after a quiet spell: at once
        #expect(s.due == 5_000)
    }

    @Test("evictedFor is a fixed word in the event log's JSON, and absent when not set")
    func evictedForCoding() throws {
        var e = event(.policy)
        e.evictedFor = EvictionReason.tooManySuspended(cap: 2, count: 3).kind
        let json = JSONLines.encode(e)
        #expect(json.contains("\"evicted_for\":\"max_suspended\""))
        #expect(JSONLines.decode(Event.self, json) == e)
        #expect(!JSONLines.encode(event(.policy)).contains("evicted_for"))
        #expect(EvictionReason.pressure(trigger: "some 1ms/1s").kind == .pressure)
        #expect(EvictionReason.budget(limitBytes: 1, usedBytes: 2).kind == .budget)
    }
}

import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Synchronization
import Testing

/// `icebox metrics` and `icebox daemon --metrics-file` on real apps, their output read by
/// the Prometheus Python client's parsers.
@Suite(
    .enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"),
    .enabled(if: PrometheusParser.unavailableReason == nil, "\(PrometheusParser.unavailableReason ?? "")"),
    .timeLimit(.minutes(5)))
struct MetricsCommandTests {
    func waitFor(_ what: String, timeout: Double = 10, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while try !condition() && Date() < deadline { usleep(20_000) }
        #expect(try condition(), "timed out waiting for \(what)")
    }

    /// An app that says READY=1 at launch, after the background notice, and after a resume
    /// (its foreground signal, SIGUSR2): every start it makes is measured.
    func launchWeb(_ box: Sandbox, env: [String: String] = [:]) throws {
        let app = box.pythonApp(extra: "signal.signal(signal.SIGUSR2, lambda s, f: notify('READY=1'))")
        let r = try box.icebox(
            ["launch", "--ready", "notify", "--foreground-signal", "SIGUSR2", "web", "--", "python3", app], extraEnv: env)
        #expect(r.status == 0, "\(r.output)")
    }

    @Test("icebox metrics: every family with its type, histograms counting what the event log shows, the state gauge")
    func metricsParse() throws {
        let box = Sandbox()
        defer { box.close() }
        try launchWeb(box)
        for name in ["idle", "gone"] { #expect(try box.icebox(["launch", name, "--", "sleep", "1000"]).status == 0) }
        for _ in 0..<2 {
            #expect(try box.icebox(["suspend", "--grace", "0", "web"]).status == 0)
            let resumed = try box.icebox(["resume", "--wait-ready", "web"])
            #expect(resumed.status == 0, "\(resumed.output)")
        }
        #expect(try box.icebox(["suspend", "--grace", "0", "idle"]).status == 0)
        #expect(try box.icebox(["evict", "gone"]).status == 0)

        let r = try box.icebox(["metrics"])
        #expect(r.status == 0, "\(r.output)")
        #expect(r.stderr.isEmpty)
        let f = try PrometheusParser.parse(r.stdout, scratch: box.dir)

        let types: [String: String] = [
            "icebox_apps": "gauge", "icebox_app_state": "gauge", "icebox_app_memory_bytes": "gauge",
            "icebox_freeze_duration_seconds": "histogram", "icebox_thaw_duration_seconds": "histogram",
            "icebox_grace_duration_seconds": "histogram", "icebox_cold_start_duration_seconds": "histogram",
            "icebox_hot_start_duration_seconds": "histogram", "icebox_evictions": "counter", "icebox_app_exits": "counter",
            "icebox_daemon_open_fds": "gauge", "icebox_daemon_resident_memory_bytes": "gauge",
            "icebox_daemon_start_time_seconds": "gauge", "icebox_daemon_cpu_seconds": "counter",
        ]
        #expect(Set(f.keys) == Set(types.keys))
        for (name, type) in types { #expect(f[name]?.type == type, "\(name) should be a \(type)") }

        // The freeze histogram counts the freezes the event log records (3: web twice, idle).
        let freezes = box.events().filter { $0.kind == .freeze }
        #expect(freezes.count == 3)
        let freeze = try #require(f["icebox_freeze_duration_seconds"])
        let counts = freeze.samples("icebox_freeze_duration_seconds_count")
        #expect(counts.map(\.value).reduce(0, +) == Double(freezes.count))
        for backend in Set(freezes.compactMap(\.backend)) {
            let n = Double(freezes.filter { $0.backend == backend }.count)
            #expect(freeze.value("icebox_freeze_duration_seconds_count", ["backend": backend.rawValue]) == n)
            #expect(freeze.samples("icebox_freeze_duration_seconds_bucket", ["backend": backend.rawValue, "le": "+Inf"]).first?.value == n)
            let sum = freezes.filter { $0.backend == backend }.compactMap(\.durationNanos).reduce(0, +)
            let shown = try #require(freeze.value("icebox_freeze_duration_seconds_sum", ["backend": backend.rawValue]))
            #expect(abs(shown - Double(sum) / 1e9) < 1e-9)
        }
        let buckets = freeze.samples("icebox_freeze_duration_seconds_bucket")
        #expect(buckets.count == counts.count * (LatencyHistogram.defaultBoundsNanos.count + 1))
        #expect(f["icebox_thaw_duration_seconds"]?.samples("icebox_thaw_duration_seconds_count").map(\.value).reduce(0, +) == 2)
        #expect(f["icebox_cold_start_duration_seconds"]?.value("icebox_cold_start_duration_seconds_count") == 3)
        #expect(f["icebox_hot_start_duration_seconds"]?.value("icebox_hot_start_duration_seconds_count") == 2)
        #expect(f["icebox_grace_duration_seconds"]?.value("icebox_grace_duration_seconds_count") == 3)

        // The state gauge: web active, idle suspended, gone ended (no longer counted).
        let apps = try #require(f["icebox_apps"])
        #expect(apps.value("icebox_apps", ["state": "active"]) == 1)
        #expect(apps.value("icebox_apps", ["state": "suspended"]) == 1)
        #expect(apps.value("icebox_apps", ["state": "background"]) == 0)
        #expect(apps.value("icebox_apps", ["state": "launching"]) == 0)
        let states = try #require(f["icebox_app_state"])
        #expect(states.value("icebox_app_state", ["app": "web", "state": "active"]) == 1)
        #expect(states.value("icebox_app_state", ["app": "idle", "state": "suspended"]) == 1)
        #expect(states.samples("icebox_app_state", ["app": "gone"]).isEmpty)
        let memory = try #require(f["icebox_app_memory_bytes"]?.samples("icebox_app_memory_bytes", ["app": "web"]).first)
        #expect(memory.value > 0 && memory.labels["source"] != nil)

        let exits = try #require(f["icebox_app_exits"])
        #expect(exits.value("icebox_app_exits_total", ["how": "evicted"]) == 1)
        #expect(exits.value("icebox_app_exits_total", ["how": "exited"]) == 0)
        #expect(f["icebox_evictions"]?.samples.count == 3)
        #expect(f["icebox_evictions"]?.samples.allSatisfy { $0.value == 0 } == true, "icebox evict is not a policy eviction")

        #expect((f["icebox_daemon_open_fds"]?.value("icebox_daemon_open_fds") ?? 0) >= 3)
        #expect((f["icebox_daemon_resident_memory_bytes"]?.value("icebox_daemon_resident_memory_bytes") ?? 0) > 1e6)
        let started = try #require(f["icebox_daemon_start_time_seconds"]?.value("icebox_daemon_start_time_seconds"))
        #expect(abs(started - Date().timeIntervalSince1970) < 120)
        #expect(f["icebox_daemon_cpu_seconds"]?.value("icebox_daemon_cpu_seconds_total") != nil)

        // OpenMetrics, through the strict parser: UNIT lines, counters, # EOF.
        let om = try box.icebox(["metrics", "--openmetrics"])
        #expect(om.status == 0, "\(om.output)")
        #expect(om.stdout.hasSuffix("\n# EOF\n"))
        let omf = try PrometheusParser.parse(om.stdout, openMetrics: true, scratch: box.dir)
        #expect(Set(omf.keys) == Set(types.keys))
        #expect(omf["icebox_freeze_duration_seconds"]?.unit == "seconds")
        #expect(omf["icebox_app_memory_bytes"]?.unit == "bytes")
        #expect(omf["icebox_app_exits"]?.value("icebox_app_exits_total", ["how": "evicted"]) == 1)

        // A policy eviction counts with its trigger: a cap of no suspended app evicts idle.
        let set = try box.icebox(["policy", "set", "--max-suspended", "0"])
        #expect(set.status == 0, "\(set.output)")
        try waitFor("the policy to evict idle") { try box.apps()["idle"]?.state == .evicted }
        try waitFor("the policy eviction's own event") { box.events("idle").contains { $0.evictedFor == .maxSuspended } }
        let after = try PrometheusParser.parse(try box.icebox(["metrics"]).stdout, scratch: box.dir)
        #expect(after["icebox_evictions"]?.value("icebox_evictions_total", ["reason": "max_suspended"]) == 1)
        #expect(after["icebox_evictions"]?.value("icebox_evictions_total", ["reason": "budget"]) == 0)
        #expect(after["icebox_app_exits"]?.value("icebox_app_exits_total", ["how": "evicted"]) == 2)
        #expect(after["icebox_apps"]?.value("icebox_apps", ["state": "suspended"]) == 0)
    }

    @Test("icebox metrics never starts a daemon: without one it exits 69 and says why")
    func noDaemon() throws {
        let box = Sandbox()
        defer { box.close() }
        let r = try box.icebox(["metrics"])
        #expect(r.status == 69)
        #expect(r.stdout.isEmpty)
        #expect(r.stderr.contains("no icebox daemon is running") && r.stderr.contains("never starts one"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: box.runtimeDir + "/icebox.sock"))
    }

    /// What a concurrent reader of the metrics file saw.
    final class Reads: Sendable {
        struct Seen {
            var reads = 0
            var partial: [String] = []
        }
        let seen = Mutex(Seen())
        let stop = Atomic(false)
    }

    @Test(
        "daemon --metrics-file: appears, parses, follows a suspend, replaced whole by rename, at most once a second",
        .enabled(if: Sandbox.inotifyRefusal == nil, "\(Sandbox.inotifyRefusal ?? ""); it counts the renames of the file"))
    func metricsFile() throws {
        let box = Sandbox()
        defer { box.close() }
        let dir = box.dir + "/textfile"
        let path = dir + "/icebox.prom"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)

        let started = try box.icebox(["daemon", "--metrics-file", path])
        #expect(started.status == 0, "\(started.output)")
        try waitFor("the metrics file") { FileManager.default.fileExists(atPath: path) }
        let first = try PrometheusParser.parse(String(contentsOfFile: path, encoding: .utf8), scratch: box.dir)
        #expect(first["icebox_apps"]?.samples.allSatisfy { $0.value == 0 } == true)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o644, "node_exporter runs as a user of its own")

        // The daemon started above exits after a second without apps; one started on demand
        // after that would find the same file in its environment.
        let env = ["ICEBOX_METRICS_FILE": path]
        try launchWeb(box, env: env)
        try waitFor("the launch in the file") {
            let f = try? PrometheusParser.parse(String(contentsOfFile: path, encoding: .utf8), scratch: box.dir)
            return f?["icebox_apps"]?.value("icebox_apps", ["state": "active"]) == 1
        }

        // A reader that reads the file whole, over and over, while the daemon rewrites it.
        let reads = Reads()
        let reader = Thread {
            while !reads.stop.load(ordering: .relaxed) {
                guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { continue }
                let whole =
                    text.hasPrefix("# HELP icebox_apps ") && text.contains("\nicebox_daemon_cpu_seconds_total ") && text.hasSuffix("\n")
                reads.seen.withLock {
                    $0.reads += 1
                    if !whole { $0.partial.append(text) }
                }
            }
        }
        let watch = try Inotify()
        try watch.addWatch(dir, mask: UInt32(IN_MOVED_TO | IN_CREATE))
        reader.start()

        // A burst of changes: five transitions well within a second or two.
        let burstStart = Date()
        for step in ["suspend", "resume", "suspend", "resume", "suspend"] {
            let r = try box.icebox(step == "suspend" ? [step, "--grace", "0", "web"] : [step, "web"], extraEnv: env)
            #expect(r.status == 0, "\(r.output)")
        }
        // The last change lands, within the rate limit's second (and some slack).
        try waitFor("the final suspend in the file", timeout: 5) {
            let f = try? PrometheusParser.parse(String(contentsOfFile: path, encoding: .utf8), scratch: box.dir)
            return f?["icebox_apps"]?.value("icebox_apps", ["state": "suspended"]) == 1
                && f?["icebox_freeze_duration_seconds"]?.samples("icebox_freeze_duration_seconds_count").map(\.value).reduce(0, +) == 3
        }
        let elapsed = Date().timeIntervalSince(burstStart)
        reads.stop.store(true, ordering: .relaxed)
        while !reader.isFinished { usleep(1_000) }

        let renames = try watch.read().filter { $0.name == "icebox.prom" && $0.mask & UInt32(IN_MOVED_TO) != 0 }.count
        // Each write is a rename onto the file (inode numbers prove nothing: a filesystem may
        // give the next temporary file the number the replaced file freed).
        #expect(renames >= 1, "the file is replaced by rename, not rewritten in place")
        #expect(Double(renames) <= elapsed.rounded(.up) + 1, "\(renames) writes in \(elapsed) s: more than one a second")
        let seen = reads.seen.withLock { $0 }
        #expect(seen.reads > 10, "the reader should have read the file many times")
        #expect(seen.partial.isEmpty, "a reader saw a partial file: \(seen.partial.first ?? "")")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["icebox.prom"], "no temporary file left behind")

        // At stop the file gets the final state.
        let stopped = try box.icebox(["daemon", "--stop", "--terminate-apps"])
        #expect(stopped.status == 0, "\(stopped.output)")
        let last = try PrometheusParser.parse(String(contentsOfFile: path, encoding: .utf8), scratch: box.dir)
        #expect(last["icebox_apps"]?.samples.allSatisfy { $0.value == 0 } == true)
        #expect(last["icebox_app_exits"]?.value("icebox_app_exits_total", ["how": "terminated"]) == 1)
    }

    @Test("--metrics-file needs an existing directory; ICEBOX_METRICS_FILE an absolute path")
    func metricsFileErrors() throws {
        let box = Sandbox()
        defer { box.close() }
        let missing = try box.icebox(["daemon", "--foreground", "--metrics-file", box.dir + "/nowhere/icebox.prom"])
        #expect(missing.status == 64)
        #expect(missing.stderr.contains("no directory \(box.dir)/nowhere"), "\(missing.stderr)")
        let relative = try box.icebox(["daemon", "--foreground"], extraEnv: ["ICEBOX_METRICS_FILE": "icebox.prom"])
        #expect(relative.status == 64)
        #expect(relative.stderr.contains("must be an absolute path"), "\(relative.stderr)")
    }
}

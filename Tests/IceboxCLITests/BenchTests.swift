import Foundation
import Glibc
import IceboxCore
import IceboxTestSupport
import Testing

/// icebox bench on a real server, with real exports read by the tools people read them with.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct BenchTests {
    /// Reads the exports the way their users' tools do: the JSON as hyperfine's analysis
    /// scripts read it (written against hyperfine's documented schema: results[].command,
    /// times, mean, stddev, median, min, max, user, system, exit_codes; percentiles of
    /// times as advanced_statistics computes them, labels and times as the plot scripts
    /// take them), the CSV with Python's csv module, the Markdown table cell by cell.
    /// Usage: python3 check.py JSON CSV MARKDOWN RUNS RELAUNCHES
    static let checker = #"""
        import csv, json, math, re, statistics, sys

        json_path, csv_path, md_path = sys.argv[1:4]
        runs, relaunches = int(sys.argv[4]), int(sys.argv[5])

        def close(a, b):
            return math.isclose(a, b, rel_tol=1e-6, abs_tol=2e-9)

        with open(json_path, encoding="utf-8") as f:
            results = json.load(f)["results"]
        assert isinstance(results, list) and results, "results is a non-empty array"
        schema = {"command", "mean", "stddev", "median", "user", "system", "min", "max", "times", "exit_codes"}
        phases = {}
        for r in results:
            assert not schema - r.keys(), ("missing keys", r.get("command"), schema - r.keys())
            assert isinstance(r["command"], str) and r["command"], "command names the phase"
            ts = r["times"]
            assert ts and all(isinstance(t, float) or isinstance(t, int) for t in ts)
            assert all(0 < t < 30 for t in ts), ("times are seconds", r["command"], ts)
            assert len(r["exit_codes"]) == len(ts) and set(r["exit_codes"]) == {0}
            assert close(statistics.fmean(ts), r["mean"]), ("mean", r["command"])
            assert close(statistics.median(ts), r["median"]), ("median", r["command"])
            assert close(min(ts), r["min"]) and close(max(ts), r["max"])
            if len(ts) > 1:
                assert close(statistics.stdev(ts), r["stddev"]), ("sample stddev", r["command"])
                p05, *_, p95 = statistics.quantiles(ts, n=20, method="inclusive")  # numpy's linear percentiles
                p25, _, p75 = statistics.quantiles(ts, n=4, method="inclusive")
                assert r["min"] <= p05 <= p25 <= r["median"] <= p75 <= p95 <= r["max"]
            else:
                assert r["stddev"] is None, "hyperfine writes null for one run"
            assert isinstance(r["user"], (int, float)) and isinstance(r["system"], (int, float))
            assert 0 <= r["user"] < 30 and 0 <= r["system"] < 30, "CPU times are seconds"
            phases[r["phase"]] = r
        labels = [b["command"] for b in results]
        all_times = [b["times"] for b in results]
        assert len(set(labels)) == len(labels) == len(all_times), "one label per box or histogram"
        for phase in ("cold_start", "hot_resume", "freeze", "thaw", "suspend"):
            assert len(phases[phase]["times"]) == runs, (phase, len(phases[phase]["times"]))
        assert len(phases["relaunch_after_eviction"]["times"]) == relaunches
        assert phases["hot_resume"]["median"] < phases["cold_start"]["median"]
        cold = phases["cold_start"]
        if cold["cpu_measured"]:
            assert cold["user"] + cold["system"] > 0, "a python start takes CPU time"
        assert not phases["freeze"]["cpu_measured"] and phases["freeze"]["user"] == 0

        with open(csv_path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            header = reader.fieldnames
            rows = list(reader)
        assert header == ["command", "phase", "mean_s", "stddev_s", "median_s", "user_s", "system_s",
                          "min_s", "max_s", "p95_s", "runs"], header
        assert [r["phase"] for r in rows] == [r["phase"] for r in results]
        for row in rows:
            for key, value in row.items():
                assert value == value.strip(), ("padding", key, value)
            for key in ("mean_s", "median_s", "min_s", "max_s", "p95_s"):
                float(row[key])
            for key in ("stddev_s", "user_s", "system_s"):
                assert row[key] == "" or float(row[key]) >= 0
            assert int(row["runs"]) == len(phases[row["phase"]]["times"])
            assert row["command"] == phases[row["phase"]]["command"], "quotes and commas survive"
            assert close(float(row["median_s"]), phases[row["phase"]]["median"]), "one unit: seconds"

        with open(md_path, encoding="utf-8") as f:
            table = [line.rstrip("\n") for line in f if line.startswith("|")]
        def cells(line):
            assert line.startswith("|") and line.endswith("|"), line
            return [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        head, rule, *body = [cells(line) for line in table]
        assert head[0] == "Phase" and all(re.fullmatch(r".+ \[(µs|ms|s)\]", c) for c in head[1:7]), head
        assert len({c[-3:] for c in head[1:7]}) == 1, "one unit for the table"
        assert len(rule) == len(head) and all(re.fullmatch(r":?-{3,}:?", c) for c in rule)
        assert len(body) == len(results)
        for row in body:
            assert len(row) == len(head), row
            for c in row[1:7]:
                assert c == "" or float(c) >= 0, c
            assert int(row[7]) > 0
        print("ok")
        """#

    @Test("bench measures cold and hot starts with the same tcp probe; hyperfine's readers, csv and Markdown read its exports")
    func tcpServer() throws {
        let box = Sandbox()
        defer { box.close() }
        let port = try #require(freeLoopbackPort())
        let json = box.dir + "/bench.json", csv = box.dir + "/bench.csv", md = box.dir + "/bench.md"
        // A comma and quotes in the command line, for the CSV to quote.
        let server = "exec python3 -m http.server \(port) --bind 127.0.0.1 # \"quoted\", comma"
        let r = try box.icebox(
            [
                "bench", "--grace", "0", "--ready", "tcp:\(port)", "--runs", "4", "--warmup", "0", "--hold", "100ms", "--evict-every", "2",
                "--export-json", json, "--export-csv", csv, "--export-markdown", md, "--", "sh", "-c", server,
            ], timeout: 90)
        #expect(r.status == 0, "\(r.output)")
        #expect(r.stdout.contains("Hot resume is"))
        // Warnings come as one summary (4 runs is few: at least that one).
        let warningLines = r.stderr.split(separator: "\n").filter { $0.hasPrefix("icebox bench:") }
        #expect(warningLines.count == 1, "\(r.stderr)")
        #expect(r.stderr.contains("only 4 runs"))
        let checker = box.dir + "/check.py"
        try Self.checker.write(toFile: checker, atomically: true, encoding: .utf8)
        let check = try ShellHarness.run(["python3", checker, json, csv, md, "4", "2"], environment: box.environment)
        #expect(check.status == 0 && check.stdout == "ok\n", "\(check.output)")
        // Nothing of the benchmark's app runs any more, and it left no record in ps --all.
        let apps = try box.apps()
        #expect(apps.isEmpty, "\(apps.keys)")
    }

    @Test("bench of an app that ends before it is ready fails then, naming how it ended, not at --ready-timeout")
    func appEndsBeforeReady() throws {
        let box = Sandbox()
        defer { box.close() }
        let port = try #require(freeLoopbackPort())
        let started = Date()
        let r = try box.icebox(
            [
                "bench", "--grace", "0", "--ready", "tcp:\(port)", "--ready-timeout", "100s", "--runs", "1", "--warmup", "0",
                "--", "sh", "-c", "echo cannot start; exit 3",
            ], timeout: 90)
        #expect(r.status == 1, "\(r.output)")
        #expect(r.stderr.contains("bench ended before it was ready (tcp:\(port)) after its launch: exited with status 3"), "\(r.stderr)")
        #expect(r.stderr.contains("icebox logs"), "\(r.stderr)")
        // Far from the 100 s it would have waited for: the check comes each second.
        #expect(Date().timeIntervalSince(started) < 60, "\(Date().timeIntervalSince(started)) s")
        #expect(try box.apps().isEmpty)
    }

    @Test("--quiet prints the results only, --style none nothing; a second bench reuses the name")
    func quietAndStyles() throws {
        let box = Sandbox()
        defer { box.close() }
        let args = ["bench", "--grace", "0", "--runs", "1", "--warmup", "0", "--hold", "10ms", "--evict-every", "0"]
        let quiet = try box.icebox(args + ["--quiet", "--", "sleep", "60"])
        #expect(quiet.status == 0, "\(quiet.output)")
        #expect(quiet.stdout.contains("Cold start") && quiet.stderr.isEmpty, "\(quiet.output)")
        let basic = try box.icebox(args + ["--style", "basic", "--", "sleep", "60"])
        #expect(basic.stdout.contains("Cold start"))
        // Several warnings (--ready exec, one run): one block, each kind once.
        #expect(basic.stderr.hasPrefix("icebox bench: ") && basic.stderr.contains(" warnings:\n  - with --ready exec"), "\(basic.stderr)")
        #expect(basic.stderr.components(separatedBy: "only 1 run").count == 2)
        #expect(!basic.stderr.contains("\r"), "no progress line")
        let json = box.dir + "/none.json"
        let none = try box.icebox(args + ["--style", "none", "--export-json", json, "--", "sleep", "60"])
        #expect(none.status == 0 && none.output.isEmpty, "\(none.output)")
        #expect(FileManager.default.fileExists(atPath: json), "exports are still written")
        let full = try box.icebox(args + ["--style", "full", "--", "sleep", "60"])
        #expect(full.stderr.contains("\r\u{1B}[K"), "a progress line even without a terminal")
        #expect(try box.icebox(args + ["--style", "fancy", "--", "sleep", "60"]).status == 64)
        #expect(try box.apps().isEmpty, "no record however many benchmarks ran")
    }

    /// The daemon's rows (freeze, thaw, suspend) come from the events of the benchmark's app,
    /// which is the one --name names: they were looked up under "bench", the default name, and
    /// went missing from a report under any other.
    @Test("--name: the report has the daemon's freeze, thaw and suspend of the app so named")
    func namedAppKeepsTheDaemonsRows() throws {
        let box = Sandbox()
        defer { box.close() }
        let json = box.dir + "/named.json"
        let r = try box.icebox([
            "bench", "--name", "web", "--grace", "0", "--runs", "2", "--warmup", "0", "--hold", "10ms", "--evict-every", "0",
            "--quiet", "--export-json", json, "--", "sleep", "60",
        ])
        #expect(r.status == 0, "\(r.output)")
        let data = try Data(contentsOf: URL(fileURLWithPath: json))
        let results = try #require((try JSONSerialization.jsonObject(with: data) as? [String: Any])?["results"] as? [[String: Any]])
        let phases = Dictionary(results.map { (($0["phase"] as? String) ?? "", ($0["times"] as? [Double])?.count ?? 0) }) { a, _ in a }
        for phase in ["freeze", "thaw", "suspend"] { #expect(phases[phase] == 2, "\(phase): \(phases)") }
        #expect(try box.apps().isEmpty)
    }

    @Test("bench with --ready notify needs a foreground signal; with it the app's READY=1 ends each hot start")
    func notifyMode() throws {
        let box = Sandbox()
        defer { box.close() }
        let refused = try box.icebox(["bench", "--ready", "notify", "--", "sleep", "1"])
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("--foreground-signal"))
        let app = box.pythonApp(extra: "signal.signal(signal.SIGUSR2, lambda s, f: notify('READY=1'))")
        let r = try box.icebox(
            [
                "bench", "--ready", "notify", "--foreground-signal", "USR2", "--runs", "3", "--warmup", "0", "--hold", "50ms",
                "--evict-every", "0", "--", "python3", app,
            ], timeout: 90)
        #expect(r.status == 0, "\(r.output)")
        #expect(r.stdout.contains("Hot resume"))
        #expect(box.events().contains { $0.detail.contains("hot start: resume → ready") })
    }
}

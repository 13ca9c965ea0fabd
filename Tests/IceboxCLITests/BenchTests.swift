import Foundation
import Glibc
import IceboxCore
import Testing

/// icebox bench on a real server, with real exports.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(2)))
struct BenchTests {
    struct Export: Decodable {
        struct Result: Decodable {
            var name: String
            var median: UInt64
            var samples: [UInt64]
        }
        var results: [Result]
        var speedup_median: Double?
    }

    @Test("bench measures cold and hot starts with the same tcp probe, and its exports parse")
    func tcpServer() throws {
        let box = Sandbox()
        defer { box.close() }
        let port = 21000 + Int(getpid() % 20000)
        let json = box.dir + "/bench.json", csv = box.dir + "/bench.csv", md = box.dir + "/bench.md"
        let r = try box.icebox(
            [
                "bench", "--ready", "tcp:\(port)", "--runs", "4", "--warmup", "0", "--hold", "100ms", "--evict-every", "2",
                "--export-json", json, "--export-csv", csv, "--export-markdown", md,
                "--", "python3", "-m", "http.server", String(port), "--bind", "127.0.0.1",
            ], timeout: 90)
        #expect(r.status == 0, "\(r.output)")
        #expect(r.stdout.contains("Hot resume is"))
        let export = try JSONDecoder().decode(Export.self, from: Data(contentsOf: URL(fileURLWithPath: json)))
        let byName = Dictionary(uniqueKeysWithValues: export.results.map { ($0.name, $0) })
        let cold = try #require(byName["cold_start"]), hot = try #require(byName["hot_resume"])
        #expect(cold.samples.count == 4 && hot.samples.count == 4)
        #expect(hot.median < cold.median, "a thaw should answer sooner than a fresh python start")
        #expect(byName["freeze"]?.samples.count == 4)
        #expect(byName["thaw"]?.samples.count == 4)
        #expect(byName["relaunch_after_eviction"]?.samples.count == 2)
        #expect((export.speedup_median ?? 0) > 1)
        let csvText = try String(contentsOfFile: csv, encoding: .utf8)
        #expect(csvText.hasPrefix("name,label,mean_ns"))
        #expect(csvText.split(separator: "\n").count == 1 + export.results.count)
        #expect(try String(contentsOfFile: md, encoding: .utf8).contains("| Cold start"))
        // Nothing of the benchmark is left: its app was evicted at the end.
        #expect(try box.apps().values.allSatisfy { $0.state.isEnded })
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

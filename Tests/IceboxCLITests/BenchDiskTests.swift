import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import IceboxTestSupport
import Testing

/// `icebox bench --to-disk` with the real criu: each run's app goes to disk and back, and
/// the disk restore is reported beside hot and cold, with the image size and the memory the
/// dump freed, in the text and in every export; a dump that fails stops the benchmark with
/// criu's reason instead of measuring a relaunch as a restore.
@Suite(
    "bench --to-disk: hot, disk and cold side by side", .serialized,
    // A cgroup freezer: icebox checkpoints no app SIGSTOP holds (criu would restore it stopped).
    .enabled(if: Sandbox.cgroupMissing == nil, "\(Sandbox.cgroupMissing ?? "")"),
    .enabled(if: PIDNamespaceTests.criu != nil, "no working criu >= 4.1 here (run scripts/criu as root to build one)"),
    .timeLimit(.minutes(5)))
struct BenchDiskTests {
    /// A python HTTP server on `port` with `megabytes` of touched ballast (the dump must carry
    /// it; the memory freed must count it).
    static func server(port: UInt16, megabytes: Int) -> String {
        """
        ballast = bytearray(\(megabytes) << 20)
        for i in range(0, len(ballast), 4096): ballast[i] = 1
        from http.server import ThreadingHTTPServer, SimpleHTTPRequestHandler
        ThreadingHTTPServer(('127.0.0.1', \(port)), SimpleHTTPRequestHandler).serve_forever()
        """
    }

    @Test("bench --to-disk: a disk row with positive figures beside hot and cold, image and memory freed, in text, JSON, CSV and Markdown")
    func diskRow() throws {
        let box = Sandbox("bench-disk")
        defer { box.close() }
        let port = try #require(freeLoopbackPort())
        let json = box.dir + "/b.json", csv = box.dir + "/b.csv", md = box.dir + "/b.md"
        let r = try box.icebox(
            [
                "bench", "--to-disk", "--grace", "0", "--ready", "http:http://127.0.0.1:\(port)/", "--runs", "2", "--warmup", "0",
                "--hold", "100ms", "--evict-every", "0", "--export-json", json, "--export-csv", csv, "--export-markdown", md,
                "--", "python3", "-c", Self.server(port: port, megabytes: 24),
            ], timeout: 180)
        #expect(r.status == 0, "\(r.output)")
        let rows = r.stdout.split(separator: "\n").map(String.init)
        let disk = try #require(rows.first { $0.hasPrefix("Disk restore") }, "\(r.stdout)")
        #expect(disk.contains("(resume → ready)") && disk.hasSuffix("2 runs"), "\(disk)")
        #expect(rows.contains { $0.hasPrefix("Checkpoint") && $0.contains("(evict → on disk)") }, "\(r.stdout)")
        #expect(rows.contains { $0.hasPrefix("Restore") && $0.contains("(criu restore)") }, "\(r.stdout)")
        #expect(rows.contains { $0.hasPrefix("Disk restore is") && $0.contains("than cold start (median, same run).") }, "\(r.stdout)")
        #expect(rows.contains { $0.hasPrefix("Disk: image ") && $0.contains("of memory freed (mean of 2 checkpoints).") }, "\(r.stdout)")
        // Hot, disk and cold in that order, one after the other.
        let order = ["Cold start", "Hot resume", "Disk restore"].compactMap { t in rows.firstIndex { $0.hasPrefix(t) } }
        #expect(order.count == 3 && order[1] == order[0] + 1 && order[2] == order[1] + 1, "\(r.stdout)")

        // The JSON: the disk phases with every sample positive, the sizes beside them.
        let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [String: Any])
        let results = try #require(object["results"] as? [[String: Any]])
        var phases: [String: [String: Any]] = [:]
        for result in results { if let id = result["phase"] as? String { phases[id] = result } }
        for id in ["cold_start", "hot_resume", "disk_restore", "checkpoint", "restore"] {
            let times = try #require(phases[id]?["times"] as? [Double], "\(id) in \(phases.keys)")
            #expect(times.count == 2 && times.allSatisfy { $0 > 0 && $0 < 60 }, "\(id): \(times)")
        }
        let restore = try #require(phases["disk_restore"])
        #expect((restore["command"] as? String)?.hasPrefix("Disk restore (resume → ready): python3 -c ") == true)
        // 24 MiB of ballast touched: the images hold it, and the dump freed at least that.
        let image = try #require(restore["image_bytes"] as? Int)
        let freed = try #require(restore["memory_freed_bytes"] as? Int)
        #expect(image > 24 << 20 && image < 256 << 20, "\(image)")
        #expect(freed > 24 << 20 && freed < 512 << 20, "\(freed)")
        let icebox = try #require(object["icebox"] as? [String: Any])
        #expect((icebox["disk_speedup_median"] as? Double ?? 0) > 0, "\(icebox)")
        let sizes = try #require(icebox["disk"] as? [String: Any])
        #expect((sizes["image_bytes"] as? [Int])?.count == 2 && sizes["image_bytes_mean"] as? Int == image, "\(sizes)")
        #expect((sizes["memory_freed_bytes"] as? [Int])?.count == 2 && sizes["memory_freed_bytes_mean"] as? Int == freed, "\(sizes)")

        // CSV and Markdown carry the row too.
        let csvText = try String(contentsOfFile: csv, encoding: .utf8)
        let csvRow = try #require(csvText.split(separator: "\r\n").first { $0.contains(",disk_restore,") }, "\(csvText)")
        #expect(csvRow.hasSuffix(",2"), "\(csvRow)")
        let mdText = try String(contentsOfFile: md, encoding: .utf8)
        #expect(mdText.contains("| Disk restore (resume → ready) |") && mdText.contains("Disk: image "), "\(mdText)")

        // From the daemon's log: two dumps to disk and two restores, none fell back to a kill.
        let events = box.events()
        #expect(events.filter { $0.kind == .checkpoint && $0.to == .onDisk }.count == 2)
        #expect(events.filter { $0.kind == .restore && $0.to == .active }.count == 2)
        #expect(!events.contains { $0.kind == .checkpoint && $0.reason == "failed" })
        // From the kernel: nothing listens on its port any more (no instance of it is left,
        // restored or not), and no images are left.
        let connect = try ShellHarness.run(
            ["python3", "-c", "import socket; socket.create_connection(('127.0.0.1', \(port)), 2)"], environment: box.environment)
        #expect(connect.status != 0, "something still answers on \(port) after the benchmark")
        #expect(((try? FileIO.list(box.stateDir + "/images")) ?? []).isEmpty, "no images left")
        #expect(try box.apps().isEmpty)
    }

    @Test("bench --to-disk of an app criu cannot dump fails with the reason, measuring no relaunch as a restore")
    func dumpFails() throws {
        let box = Sandbox("bench-disk-fail")
        defer { box.close() }
        // A stream unix socket to this test: criu cannot dump half of a connection.
        let path = box.dir + "/peer.sock"
        let listener = try UnixSocket.listen(path: path)
        defer {
            shutdown(listener, Int32(SHUT_RDWR))  // wakes the accept below if nothing connected
            close(listener)
        }
        // Accepted (so this process holds the other end, which icebox sees) before the app
        // counts as ready: the probe waits for this file.
        let accepted = box.dir + "/accepted"
        Thread {
            // This end held open until the app's end closes the other (the listener is
            // non-blocking: wait for the app's connection first).
            _ = try? Poll.wait(listener, events: Int16(POLLIN), timeoutNanos: 60_000_000_000)
            let peer = accept(listener, nil, nil)
            guard peer >= 0 else { return }
            close(open(accepted, O_CREAT | O_WRONLY, 0o600))
            var byte: UInt8 = 0
            while read(peer, &byte, 1) > 0 {}
            close(peer)
        }.start()
        let app = "import socket, time\ns = socket.socket(socket.AF_UNIX)\ns.connect('\(path)')\nwhile True: time.sleep(1)\n"
        let json = box.dir + "/b.json"
        let r = try box.icebox(
            [
                "bench", "--to-disk", "--grace", "0", "--ready", "cmd:test -e '\(accepted)'", "--runs", "2", "--warmup", "0", "--hold",
                "50ms",
                "--export-json", json, "--", "python3", "-c", app,
            ], timeout: 120)
        #expect(r.status == 1, "\(r.output)")
        #expect(r.stderr.contains("could not go to disk") && r.stderr.contains("stream unix socket"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: json), "no figures from a failed benchmark")
        let events = box.events()
        #expect(events.contains { $0.kind == .checkpoint && $0.reason == "failed" })
        #expect(!events.contains { $0.kind == .restore }, "nothing restored")
        #expect(try box.apps().isEmpty, "the app was evicted and forgotten")
    }
}

import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import IceboxTestSupport
import Testing

@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct NotifyTests {
    @Test(
        "systemd-notify works as a real client: READY=1 and STATUS=",
        .enabled(
            if: FileManager.default.fileExists(atPath: "/usr/bin/systemd-notify")
                || FileManager.default.fileExists(atPath: "/bin/systemd-notify"),
            "systemd-notify is not installed (apt-get install systemd)"))
    func systemdNotify() throws {
        let box = Sandbox()
        defer { box.close() }
        let r = try box.icebox([
            "launch", "--ready", "notify", "--ready-timeout", "10s", "svc", "--",
            "sh", "-c", "sleep 0.2; systemd-notify --ready --status='up and running'; exec sleep 1000",
        ])
        #expect(r.status == 0, "\(r.output)")
        let record = try #require(try box.apps()["svc"])
        #expect(record.state == .active)
        #expect(record.statusText == "up and running")
        #expect((record.coldStartNanos ?? 0) >= 200_000_000)
    }

    @Test("a notify message from a process outside the app is dropped and logged")
    func foreignSender() throws {
        let box = Sandbox()
        defer { box.close() }
        // A ready timeout far longer than the test: under load a short one (1.5 s) ran out
        // between the socket's appearance and the message, and the app's end took the
        // message with it. The launch is ended by a terminate once the drop is seen.
        let launching = Sandbox.Background(
            box, ["launch", "--ready", "notify", "--ready-timeout", "60s", "target", "--", "sleep", "1000"])
        let socket = box.runtimeDir + "/notify/target"
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: socket) && Date() < deadline { usleep(5_000) }
        // READY=1 from us, not from the app: it must not complete the launch.
        try UnixSocket.sendDatagram(path: socket, "READY=1")
        let dropped = Scenario.eventually(seconds: 20) {
            box.events("target").contains { $0.detail.contains("dropped a message from pid \(getpid())") }
        }
        #expect(dropped, "\(box.events("target").map(\.detail))")
        #expect(!box.events("target").contains { $0.kind == .ready })
        #expect(try box.apps()["target"]?.state == .launching)
        #expect(try box.icebox(["terminate", "target"]).status == 0)
        let launch = launching.result(within: 20)
        #expect(launch?.status == 1, "\(launch?.output ?? "still launching after 20 s")")
        #expect(!box.events("target").contains { $0.kind == .ready })
    }

    /// Bytes the process has written through write(2) and its kin (/proc/PID/io wchar): the
    /// daemon writes nothing but the event log, registry records and the metrics file here.
    static func bytesWritten(_ pid: pid_t) -> UInt64? {
        let io = (try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8)) ?? ""
        return io.split(separator: "\n").first { $0.hasPrefix("wchar:") }.flatMap {
            UInt64($0.dropFirst(6).trimmingCharacters(in: .whitespaces))
        }
    }

    @Test(
        "an app's own flood of STATUS=, STOPPING=1 and WATCHDOG=trigger writes a bounded log and registry, and ps shows the latest STATUS"
    )
    func ownFloodIsBounded() throws {
        let box = Sandbox()
        defer { box.close() }
        // As nobody, two seconds of sendto in a loop, each kind in turn, a STATUS of 3 KB (a
        // record write each was ~4 KB); then one last STATUS, with the number sent.
        let flood = """
            import os, socket, time
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            addr = os.environ['NOTIFY_SOCKET']
            s.sendto(b'READY=1', addr)
            pad = 'x' * 3000
            end = time.time() + 2
            i = 0
            while time.time() < end:
                i += 1
                k = i % 3
                msg = f'STATUS=step {i} {pad}' if k == 0 else ('STOPPING=1' if k == 1 else 'WATCHDOG=trigger')
                s.sendto(msg.encode(), addr)
            s.sendto(f'STATUS=final {i}'.encode(), addr)
            while True: time.sleep(1)
            """
        #expect(try box.icebox(["launch", "calm", "--", "sleep", "1000"]).status == 0)  // starts the daemon
        let daemon = try #require(box.daemonPID)
        let linesBefore = box.events().count
        let writtenBefore = try #require(Self.bytesWritten(daemon))
        let r = try box.icebox([
            "launch", "--user", "nobody", "--cwd", "/", "--ready", "notify", "flood", "--", "/usr/bin/python3", "-c", flood,
        ])
        #expect(r.status == 0, "\(r.output)")
        let deadline = Date().addingTimeInterval(20)
        var status = ""
        repeat {
            usleep(100_000)
            status = try box.apps()["flood"]?.statusText ?? ""
        } while !status.hasPrefix("final ") && Date() < deadline
        let sent = try #require(Int(status.dropFirst(6)), "the app did not finish its flood: \(status.prefix(40))")
        #expect(sent > 3_000, "the flood was too small to show anything: \(sent) messages")
        // The last STATUS: ps shows it, and the registry gets it within its interval.
        let registry = box.stateDir + "/registry/flood.json"
        var record = ""
        let written = Date().addingTimeInterval(5)
        repeat {
            usleep(100_000)
            record = (try? String(contentsOfFile: registry, encoding: .utf8)) ?? ""
        } while !record.contains("final \(sent)") && Date() < written
        #expect(try box.apps()["flood"]?.statusText == "final \(sent)")
        #expect(record.contains("\"status_text\":\"final \(sent)\""), "the registry does not hold the last STATUS")
        usleep(1_200_000)  // the last second's summaries
        let events = box.events()
        let lines = events.count - linesBefore
        let bytes = (Self.bytesWritten(daemon) ?? 0) - writtenBefore
        print("\(sent) messages from the app in 2 s: \(lines) event lines, \(bytes) bytes written by the daemon")
        // Each kind: a line a second and a summary a second, over ~2 s; the launch's own lines.
        #expect(lines < 60, "\(lines) event lines for \(sent) messages")
        #expect(bytes < 1_000_000, "the daemon wrote \(bytes) bytes for \(sent) messages")
        let flooded = events.filter { $0.app == "flood" }.map(\.detail)
        #expect(
            flooded.contains { $0.hasPrefix("STOPPING=1 sent") && $0.hasSuffix("more times (logged at most once a second)") }, "\(flooded)")
        #expect(flooded.contains { $0.hasPrefix("the watchdog fired") }, "\(flooded)")
        #expect(flooded.contains { $0.hasPrefix("STATUS= changed") }, "\(flooded)")
        #expect(try box.apps()["flood"]?.state == .active)
    }

    @Test("--ready tcp:PORT waits until the port accepts")
    func readyTCP() throws {
        let box = Sandbox()
        defer { box.close() }
        let port = try #require(freeLoopbackPort())
        let r = try box.icebox([
            "launch", "--ready", "tcp:\(port)", "--ready-timeout", "20s", "http", "--",
            "python3", "-c",
            "import time, http.server as h; time.sleep(0.3); h.HTTPServer(('127.0.0.1', \(port)), h.SimpleHTTPRequestHandler).serve_forever()",
        ])
        #expect(r.status == 0, "\(r.output)")
        let record = try #require(try box.apps()["http"])
        #expect(record.state == .active)
        #expect((record.coldStartNanos ?? 0) >= 300_000_000)
    }

    @Test("--ready http:URL waits in the daemon for a 2xx; icebox probe makes the same check and says why it failed")
    func readyHTTP() throws {
        let box = Sandbox()
        defer { box.close() }
        let port = try #require(freeLoopbackPort())
        let url = "http://127.0.0.1:\(port)/"
        let r = try box.icebox([
            "launch", "--ready", "http:\(url)", "--ready-timeout", "20s", "--cwd", box.dir, "web", "--",
            "python3", "-c",
            "import time, http.server as h; time.sleep(0.3); h.HTTPServer(('127.0.0.1', \(port)), h.SimpleHTTPRequestHandler).serve_forever()",
        ])
        #expect(r.status == 0, "\(r.output)")
        let record = try #require(try box.apps()["web"])
        #expect(record.state == .active)
        #expect((record.coldStartNanos ?? 0) >= 300_000_000)
        let ok = try box.icebox(["probe", "http:\(url)"])
        #expect(ok.status == 0, "\(ok.output)")
        let missing = try box.icebox(["probe", "http:\(url)no-such-file"])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("answered HTTP/1.0 404"), "\(missing.stderr)")
        let named = try box.icebox(["probe", "http:http://example.com/"])
        #expect(named.status == 64)
        #expect(named.stderr.contains("do not resolve host names"), "\(named.stderr)")
    }

    @Test("--ready http:URL: an attempt the server accepts and never answers is abandoned at its deadline and retried")
    func readyHTTPSilentFirst() throws {
        let box = Sandbox()
        defer { box.close() }
        let port = try #require(freeLoopbackPort())
        let server = """
            import socket
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(('127.0.0.1', \(port)))
            s.listen(16)
            held = s.accept()[0]  # the first connection: accepted, never answered
            while True:
                c = s.accept()[0]
                c.recv(4096)
                c.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Length: 0\\r\\n\\r\\n')
                c.close()
            """
        let r = try box.icebox([
            "launch", "--ready", "http:http://127.0.0.1:\(port)/", "--ready-timeout", "20s", "slowweb", "--", "python3", "-c", server,
        ])
        #expect(r.status == 0, "\(r.output)")
        let record = try #require(try box.apps()["slowweb"])
        #expect(record.state == .active)
        // Ready only after the first attempt's deadline (5 s), not stuck on it until the ready timeout.
        let cold = record.coldStartNanos ?? 0
        #expect(cold >= 5_000_000_000 && cold < 15_000_000_000, "\(DurationText.format(cold))")
    }

    @Test("--ready cmd:PROBE waits until the probe exits 0; a timeout terminates the app")
    func readyCommand() throws {
        let box = Sandbox()
        defer { box.close() }
        let flag = box.dir + "/ready-flag"
        let ok = try box.icebox([
            "launch", "--ready", "cmd:test -e \(flag)", "probe", "--", "sh", "-c", "sleep 0.3; touch \(flag); exec sleep 1000",
        ])
        #expect(ok.status == 0, "\(ok.output)")
        let late = try box.icebox(["launch", "--ready", "cmd:false", "--ready-timeout", "300ms", "never", "--", "sleep", "1000"])
        #expect(late.status == 1)
        #expect(late.stderr.contains("was not ready"))
        #expect(try box.apps()["never"]?.state.isEnded == true)
    }
}

import Glibc
import IceboxCore
import IceboxSystem
import IceboxTestSupport
import Synchronization
import Testing

/// The client against fake daemons: a socket that never answers, one that answers a
/// failure, one that hangs up; and the event stream against a log file the test writes.
/// No root needed.
@Suite(.timeLimit(.minutes(5)))
struct IceboxClientTests {
    @Test("no daemon: unavailable (69), naming the runtime directory")
    func noDaemon() throws {
        let dir = makeTemporaryDirectory("client")
        defer { removeTree(dir) }
        let client = IceboxClient(runtimeDirectory: dir, stateDirectory: dir)
        let error = #expect(throws: IceboxError.self) { try client.apps() }
        #expect(error?.code == .unavailable)
        #expect(error?.message == "no icebox daemon is running for \(dir)")
    }

    @Test("a daemon that never answers fails the call at its deadline instead of blocking")
    func deadline() throws {
        let dir = makeTemporaryDirectory("client")
        defer { removeTree(dir) }
        var client = IceboxClient(runtimeDirectory: dir, stateDirectory: dir)
        // Listening but never accepting: connect and send succeed (the kernel queues them).
        let listener = try UnixSocket.listen(path: client.paths.controlSocket)
        defer { close(listener) }
        client.timeout = .milliseconds(200)
        let start = Clock.monotonicNanos()
        let error = #expect(throws: IceboxError.self) { try client.suspend("web") }
        let waited = Clock.monotonicNanos() - start
        #expect(error?.message == "the icebox daemon did not finish suspend in time", "\(String(describing: error))")
        #expect(waited >= 200_000_000 && waited < 5_000_000_000, "waited \(waited) ns")
    }

    @Test("a failure carries the daemon's message (without 'icebox: ') and its exit code")
    func failure() throws {
        let replies = [
            ControlReply(kind: .line, text: "web  active → background  no notice; grace 0: freezing at once"),
            ControlReply(kind: .warning, text: "icebox: web: freeze failed: cannot write cgroup.freeze"),
            ControlReply(kind: .done, code: 77),
        ]
        let error = try FakeDaemon.answering(replies) { client in
            #expect(throws: IceboxError.self) { try client.suspend("web") }
        }
        #expect(error?.code == .permission)
        #expect(error?.message == "web: freeze failed: cannot write cgroup.freeze")
    }

    @Test("success: the lines and warnings the daemon said; the request it got")
    func success() throws {
        let replies = [
            ControlReply(kind: .line, text: "web  suspended → active  thawed in 82.5 µs (cgroup2)"),
            ControlReply(kind: .warning, text: "icebox: a note"),
            ControlReply(kind: .done, code: 0),
        ]
        var request: ControlRequest?
        let output = try FakeDaemon.answering(replies, received: { request = $0 }) { client in
            try client.send(.resume(names: ["web"], waitReady: false))
        }
        #expect(output == CommandOutput(lines: ["web  suspended → active  thawed in 82.5 µs (cgroup2)"], warnings: ["a note"]))
        #expect(request == .resume(names: ["web"], waitReady: false))
    }

    @Test("a typed result is built from the event a line carries, not from its text")
    func resultFromEvent() throws {
        var thaw = Event(
            app: "web", pid: 42, kind: .thaw, from: .suspended, to: .active, durationNanos: 82_500, detail: "x",
            at: Instant(monotonicNanos: 7, wallNanos: 0))
        thaw.backend = .cgroup1
        thaw.tasks = 3
        var line = ControlReply(kind: .line, text: "web  suspended → active  thawed in 1 year (words)")
        line.event = thaw
        let result = try FakeDaemon.answering([line, ControlReply(kind: .done, code: 0)]) { client in try client.resume("web") }
        #expect(result.how == .thawed && result.thawTime == .nanoseconds(82_500))
        #expect(result.backend == .cgroup1 && result.tasks == 3 && result.readyAfter == nil)
        #expect(result.lines == ["web  suspended → active  thawed in 1 year (words)"] && result.events == [thaw])
    }

    @Test("a daemon that hangs up before done is an error, not a success: the request may or may not have been done")
    func hangUp() throws {
        let error = try FakeDaemon.answering([ControlReply(kind: .line, text: "half")]) { client in
            #expect(throws: IceboxError.self) { try client.evict("web") }
        }
        // The CLI's words (ClientSession): an evict the daemon read may have been done.
        #expect(error?.reason == .daemonWentAway)
        #expect(
            error?.message
                == "the icebox daemon went away (it ended or was killed) before it finished evict: it may or may not have been done, and is not sent again"
        )
    }

    @Test("the event stream: new events only (or all, with replay), one app's or all, ending when the directory goes")
    func events() async throws {
        let dir = makeTemporaryDirectory("events")
        defer { removeTree(dir) }
        let client = IceboxClient(runtimeDirectory: dir + "/run", stateDirectory: dir + "/state")
        let log = client.paths.eventLog
        try FileIO.makeDirectories(client.paths.stateDir)
        try appendLine(log, JSONLines.encode(Event(app: "web", pid: 1, kind: .spawn, detail: "old", at: .read())))

        let web = try client.events(for: "web")
        let everything = try client.events(replay: true)
        for (app, kind) in [("db", EventKind.spawn), ("web", .notice), ("web", .freeze)] {
            try appendLine(log, JSONLines.encode(Event(app: app, pid: 2, kind: kind, detail: "new", at: .read())))
        }
        let seen = await collect(web, through: .freeze, within: .seconds(10))
        #expect(seen.map(\.kind) == [.notice, .freeze])
        #expect(seen.allSatisfy { $0.app == "web" && $0.detail == "new" })
        let all = await collect(everything, through: .freeze, within: .seconds(10))
        #expect(all.map(\.app) == ["web", "db", "web", "web"])

        // Removing the state directory (as a stopping Supervisor does) ends a stream.
        let ending = try client.events()
        try FileIO.removeTree(client.paths.stateDir)
        var count = 0
        for await _ in ending { count += 1 }
        #expect(count == 0)
    }

    /// Appends one line as the daemon does (O_APPEND, one write), so the followers see it whole.
    private func appendLine(_ path: String, _ line: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SystemError("append to", path: path) }
        defer { close(fd) }
        let text = Array((line + "\n").utf8)
        guard write(fd, text, text.count) == text.count else { throw SystemError("append to", path: path) }
    }
}

/// A one-connection daemon on a thread: accepts, reads one request line, sends `replies`
/// and hangs up.
enum FakeDaemon {
    static func answering<R>(
        _ replies: [ControlReply], received: (ControlRequest?) -> Void = { _ in }, _ body: (IceboxClient) throws -> R
    ) throws -> R {
        let dir = makeTemporaryDirectory("fake")
        defer { removeTree(dir) }
        let client = IceboxClient(runtimeDirectory: dir, stateDirectory: dir)
        let listener = try UnixSocket.listen(path: client.paths.controlSocket)
        defer { close(listener) }
        let request = ReceivedLine()
        let lines = replies.map { JSONLines.encode($0) + "\n" }.joined()
        let server = try JoinableThread {
            var pfd = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            guard (try? Poll.wait(&pfd, until: Clock.monotonicNanos() + 10_000_000_000)) == 1,
                let fd = UnixSocket.accept(listener)
            else { return }
            defer { close(fd) }
            var got: [UInt8] = []
            while !got.contains(10) {
                var conn = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
                guard (try? Poll.wait(&conn, until: Clock.monotonicNanos() + 10_000_000_000)) == 1,
                    let chunk = try? UnixSocket.receiveStream(fd), !chunk.bytes.isEmpty
                else { return }
                got += chunk.bytes
            }
            request.line.withLock { $0 = String(decoding: got.prefix { $0 != 10 }, as: UTF8.self) }
            try? UnixSocket.send(fd, Array(lines.utf8))
        }
        defer { server.join(until: Clock.monotonicNanos() + 10_000_000_000) }
        let result = try body(client)
        server.join(until: Clock.monotonicNanos() + 10_000_000_000)
        received(request.line.withLock { $0 }.flatMap { JSONLines.decode(ControlRequest.self, $0) })
        return result
    }
}

/// The request line the fake daemon read, handed from its thread to the test's.
final class ReceivedLine: Sendable {
    let line = Mutex<String?>(nil)
}

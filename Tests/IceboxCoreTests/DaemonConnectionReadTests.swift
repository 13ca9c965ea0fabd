import Glibc
import IceboxSystem
import IceboxTestSupport
import Testing

@testable import IceboxCore

/// How a client reads the daemon's replies off a real socket: lines longer than a read,
/// several lines in one read, a line JSONReader declines (JSONDecoder reads it), and the
/// connection's end before `done`.
@Suite struct DaemonConnectionReadTests {
    func withServer(_ body: (DaemonConnection, Int32) throws -> Void) throws {
        let dir = makeTemporaryDirectory("replies")
        defer { removeTree(dir) }
        let listener = try UnixSocket.listen(path: dir + "/s.sock")
        defer { close(listener) }
        let connection = try DaemonConnection(socket: dir + "/s.sock")
        let peer = try #require(UnixSocket.accept(listener))
        defer { close(peer) }
        try body(connection, peer)
    }

    func line(_ reply: ControlReply) -> [UInt8] { Array((JSONLines.encode(reply) + "\n").utf8) }

    @Test func longAndShortAndUnusualLinesAllArrive() throws {
        try withServer { connection, peer in
            // 60 KB: more than the first read's 4 KiB and than the 64 KiB reads after it
            // take in one go once the line's head has been read.
            let long = String(repeating: "0123456789abcdef", count: 3840)
            var bytes = line(ControlReply(kind: .line, text: long))
            bytes += line(ControlReply(kind: .line, text: "short"))
            // An escaped key is not JSONReader's plain form: JSONDecoder reads this one.
            bytes += Array(#"{"\u006bind":"line","text":"escaped"}"#.utf8) + [10]
            bytes += line(ControlReply(kind: .done, code: 0))
            try UnixSocket.send(peer, bytes)
            var texts: [String] = []
            let code = try connection.replies(until: Clock.monotonicNanos() + 5_000_000_000, what: "test") { reply in
                if let text = reply.text { texts.append(text) }
            }
            #expect(code == 0)
            #expect(texts == [long, "short", "escaped"])
        }
    }

    @Test func anEndBeforeDoneIsAnError() throws {
        try withServer { connection, peer in
            try UnixSocket.send(peer, line(ControlReply(kind: .line, text: "partial")))
            shutdown(peer, Int32(SHUT_WR))
            var texts: [String] = []
            #expect(throws: IceboxError.self) {
                _ = try connection.replies(until: Clock.monotonicNanos() + 5_000_000_000, what: "test") { reply in
                    if let text = reply.text { texts.append(text) }
                }
            }
            #expect(texts == ["partial"])
            // next() says the same end with nil.
            #expect(try connection.next(until: Clock.monotonicNanos() + 5_000_000_000, what: "test") == nil)
        }
    }
}

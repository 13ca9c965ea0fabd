import Glibc
import IceboxSystem
import Testing

@testable import IceboxCore

/// The daemon's side of a control connection on a real socket pair: replies never wait for a
/// client, a client that stops reading is cut off at a bound, and requests are bounded too.
@Suite("ClientConnection")
struct ClientConnectionTests {
    static func pair() -> (daemon: Int32, client: Int32) {
        var fds: [Int32] = [-1, -1]
        let rc = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds)
        precondition(rc == 0, "socketpair: \(errno)")
        return (fds[0], fds[1])
    }

    /// What the daemon does within one turn of its loop: queue, then flush.
    static func send(_ conn: inout ClientConnection, _ bytes: [UInt8]) -> ClientConnection.Queued {
        conn.queue(bytes) ? conn.flush() : .overflow
    }

    @Test func aClientThatStopsReadingIsCutOffWithoutTheDaemonWaiting() {
        let (d, c) = Self.pair()
        defer { close(d); close(c) }
        var conn = ClientConnection(fd: d)
        let chunk = [UInt8](repeating: 65, count: 64 * 1024)
        var outcomes: [ClientConnection.Queued] = []
        let start = Clock.monotonicNanos()
        for _ in 0..<200 {
            let o = Self.send(&conn, chunk)
            outcomes.append(o)
            if o == .overflow { break }
        }
        let took = Clock.monotonicNanos() - start
        #expect(outcomes.first == .sent, "the socket takes the first reply at once")
        #expect(outcomes.contains(.pending), "then replies wait in the buffer")
        #expect(outcomes.last == .overflow, "and past the bound the client is cut off")
        #expect(conn.pendingOutput < ClientConnection.maxPendingReplyBytes + chunk.count, "the bound and one reply at most")
        // 200 queue calls with a full socket: no call waited for the client (seconds if it had).
        #expect(took < 2_000_000_000, "queueing took \(took) ns")
    }

    @Test func oneReplyLargerThanTheBoundIsTakenWhenNothingWaitsBeforeIt() {
        let (d, c) = Self.pair()
        defer { close(d); close(c) }
        var conn = ClientConnection(fd: d)
        let huge = [UInt8](repeating: 67, count: ClientConnection.maxPendingReplyBytes * 2)
        let first = conn.queue(huge), second = conn.queue([10])
        #expect(first, "ps --json of many apps is one line")
        #expect(second, "and the line after it still goes")
        let flushed = conn.flush()
        #expect(flushed == .pending)
        let more = conn.queue([10])
        #expect(!more, "a client that does not read is cut off at the next reply")
    }

    @Test func pendingRepliesGoOutOnceTheClientReads() {
        let (d, c) = Self.pair()
        defer { close(d); close(c) }
        var conn = ClientConnection(fd: d)
        let chunk = [UInt8](repeating: 66, count: 64 * 1024)
        var queued = 0
        while Self.send(&conn, chunk) != .pending { queued += 1 }
        queued += 1
        var received = 0
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while received < queued * chunk.count {
            let n = read(c, &buffer, buffer.count)
            if n > 0 { received += n } else if conn.flush() == .sent, n <= 0 { continue }
            _ = conn.flush()
        }
        #expect(received == queued * chunk.count)
        #expect(conn.pendingOutput == 0)
    }

    @Test func aBrokenConnectionFails() {
        let (d, c) = Self.pair()
        close(c)
        defer { close(d) }
        var conn = ClientConnection(fd: d)
        if case .failed = Self.send(&conn, Array("{}\n".utf8)) {} else { Issue.record("a write to a closed peer must fail") }
    }

    @Test func requestLinesAreSplitAndBounded() {
        var conn = ClientConnection(fd: -1)
        conn.input = Array("{\"ping\":{}}\n{\"ps\"".utf8)
        #expect(conn.nextLine() == "{\"ping\":{}}")
        #expect(conn.nextLine() == nil)
        #expect(!conn.inputOverflowed)
        conn.input = [UInt8](repeating: 32, count: ClientConnection.maxRequestBytes + 1)
        #expect(conn.inputOverflowed)
    }

    @Test func inputWhileARequestIsAnsweredIsBoundedEvenWithNewlines() {
        var conn = ClientConnection(fd: -1)
        conn.input = Array(repeating: 10, count: ClientConnection.maxRequestBytes + 1)
        #expect(!conn.inputOverflowed, "whole lines waiting for their turn are not an overflow")
        conn.busy = true
        #expect(conn.inputOverflowed, "but nothing more is read from a busy connection: it may not grow")
    }
}

import IceboxSystem

/// One client connection on the control socket: its partial request and unsent replies, both
/// bounded: a client that sends without end, or stops reading, is cut off.
struct ClientConnection {
    static let maxRequestBytes = 1 << 20  // a launch with a large environment: a few hundred KiB
    /// Replies left unread after the last send are kept up to this, then the client is cut
    /// off; one turn's answer is taken whole (`ps --json` of 10,000 apps: about 9 MiB).
    static let maxPendingReplyBytes = 4 << 20
    /// The most descriptors (SCM_RIGHTS) one connection may pass: `icebox run`'s stdio.
    static let maxDescriptors = 3
    /// How long a finished connection may take to read its last replies before it is closed.
    static let drainNanos: UInt64 = 5_000_000_000

    let fd: Int32
    var input: [UInt8] = []
    var fds: [Int32] = []
    var busy = false  // a request is being answered: further input waits
    var attachedApp: String?
    private(set) var output: [UInt8] = []
    private var outputStart = 0
    private var unreadAfterFlush = 0  // what the client had not taken at the last `flush`
    var closeAt: UInt64?  // finished: close once the replies are out, or at this deadline

    init(fd: Int32) { self.fd = fd }

    var pendingOutput: Int { output.count - outputStart }

    enum Queued: Equatable {
        case sent  // all of it is with the kernel
        case pending  // some waits: watch the socket for EPOLLOUT
        case overflow  // the client does not read: cut it off
        case failed(String)  // the connection is broken
    }

    var watchingWritable = false  // watched for EPOLLOUT (replies wait for room)

    /// Queues a reply for the next `flush`; false (nothing queued) if too much was left unread.
    mutating func queue(_ bytes: [UInt8]) -> Bool {
        if unreadAfterFlush >= Self.maxPendingReplyBytes { return false }
        output.append(contentsOf: bytes)
        return true
    }

    /// Sends what the socket takes now (on EPOLLOUT).
    mutating func flush() -> Queued {
        defer { unreadAfterFlush = pendingOutput }
        while pendingOutput > 0 {
            let n: Int
            do { n = try UnixSocket.sendSome(fd, output[outputStart...]) } catch { return .failed(error.description) }
            if n == 0 { break }
            outputStart += n
        }
        if pendingOutput == 0 {
            output = []
            outputStart = 0
            return .sent
        }
        // Keep the buffer from growing with what was already sent.
        if outputStart > 65536 {
            output.removeFirst(outputStart)
            outputStart = 0
        }
        return .pending
    }

    /// Takes the next whole request line, if one has arrived; nil otherwise.
    mutating func nextLine() -> String? {
        guard let newline = input.firstIndex(of: 10) else { return nil }
        let line = String(decoding: input[..<newline], as: UTF8.self)
        input.removeSubrange(...newline)
        return line
    }

    /// Whether the input outgrew any request: a line without a newline, or (while busy) anything.
    var inputOverflowed: Bool { input.count > Self.maxRequestBytes && (busy || !input.contains(10)) }
}

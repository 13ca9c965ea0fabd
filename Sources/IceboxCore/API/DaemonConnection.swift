import Glibc
import IceboxSystem

/// One connection to a daemon's control socket: a `ControlRequest` out as a JSON line,
/// `ControlReply` lines in until `done` (or `exit`). Every wait for a reply has a deadline: a
/// hung daemon fails the request. `IceboxClient` and the CLI share it.
package final class DaemonConnection {
    package let fd: Int32
    private var buffer: [UInt8] = []
    /// How much of `buffer` is known to hold no newline: a 1.6 MB `ps --json` line arrives in
    /// 64 KiB reads, and searching it from the start after each took a fifth of the client's time.
    private var searched = 0
    /// Where each read lands: allocated once (grown once, see readAvailable), never zeroed (a
    /// zeroed 64 KiB array per read was a tenth of a one-shot client's CPU time).
    private var readRoom: UnsafeMutableRawBufferPointer?
    /// Whether anything has come from the daemon on this connection.
    private var received = false
    /// The daemon reset the connection (or had closed it when the request was sent).
    private var reset = false
    /// The daemon closed the connection (an end of file) or reset it.
    package private(set) var ended = false

    /// The request never reached a daemon that read it: the connection was reset (or found closed
    /// at the send) before a byte of answer. A daemon does that only to a connection it never
    /// accepted, closing its listener on its way out (idle, or killed); one that read the whole
    /// request leaves nothing unread, and its close reads as an end of file. Sending it again, to
    /// the next daemon, cannot make it happen twice.
    package var resetUnanswered: Bool { reset && !received }

    /// The daemon went away (closed or reset the connection) before a byte of answer: nothing
    /// was printed, and no refusal (a `done` reply, sent before the close) came. Whether it had
    /// read the request is not known: only a request that changes nothing
    /// (`ControlRequest.isReadOnly`) may then go to the next daemon.
    package var endedBeforeAnyReply: Bool { ended && !received }

    /// Connects to the socket at `path`. The error is the system's, so a caller can tell "no
    /// daemon" (ENOENT, ECONNREFUSED) from other failures.
    package init(socket path: String) throws(SystemError) {
        fd = try UnixSocket.connect(path: path)
    }

    deinit {
        close(fd)
        readRoom?.deallocate()
    }

    /// Refuses, before anything is sent, a socket path that is not a socket (a symbolic link,
    /// a file): someone else's doing. Nothing there is fine (connecting then says ENOENT).
    package static func checkSocketPath(_ path: String) throws(IceboxError) {
        let status: FileIO.Status?
        do { status = try FileIO.linkStatus(path) } catch { return }  // connect will say what is wrong
        guard let status, status.kind != .socket else { return }
        let what = status.kind == .symlink ? "it is a symbolic link" : "it is not a socket"
        throw IceboxError(
            .permission, "refusing to use the control socket \(path): \(what)",
            hint: "remove it, or set ICEBOX_RUNTIME_DIR to a directory of your own")
    }

    /// Whether a daemon running as `daemon` may be told anything by a client running as `client`:
    /// the same user, or root for root (only root can be trusted with another user's environment
    /// and descriptors).
    package static func trusts(daemon: uid_t, client: uid_t) -> Bool {
        daemon == client || daemon == 0 && client == 0
    }

    /// Checks who listens on the other end (SO_PEERCRED: the daemon's uid when it bound the
    /// socket) before anything is sent: a request carries the environment and, for
    /// `icebox run`, the terminal's descriptors. Anyone else's listener is refused.
    package func requireTrustedDaemon(socket path: String) throws(IceboxError) {
        let me = geteuid()
        guard let peer = UnixSocket.peerCredentials(fd) else {
            throw IceboxError(
                .permission, "cannot tell who listens on \(path) (SO_PEERCRED failed): not talking to it",
                hint: "set ICEBOX_RUNTIME_DIR to a directory of your own")
        }
        if Self.trusts(daemon: peer.uid, client: me) { return }
        if me == 0 {
            throw IceboxError(
                .permission,
                "refusing to talk to the icebox daemon at \(path): it runs as uid \(peer.uid) (pid \(peer.pid)), and root talks only to root's",
                hint: "stop it, or set ICEBOX_RUNTIME_DIR to a directory of root's own")
        }
        throw IceboxError(
            .permission,
            "permission denied: the icebox daemon at \(path) belongs to uid \(peer.uid) (pid \(peer.pid)), not to you (uid \(me))",
            hint: "run your own: set ICEBOX_RUNTIME_DIR (and ICEBOX_STATE_DIR) to directories of your own")
    }

    /// A request's JSON line, encoded before the connect: encoded after, it reached the daemon
    /// 30-45 µs after the connect, which woke it to find nothing to read.
    package struct Line {
        package let bytes: [UInt8]
        package let commandName: String

        package init(_ request: ControlRequest) {
            bytes = Array((JSONLines.encode(request) + "\n").utf8)
            commandName = request.commandName
        }
    }

    /// Sends one request, with descriptors attached (`icebox run` passes its stdio). If the daemon
    /// closed the connection first (EPIPE), what it said before closing (a refusal) is the error,
    /// not the broken pipe.
    package func send(_ request: ControlRequest, fds: [Int32] = []) throws(IceboxError) {
        try send(Line(request), fds: fds)
    }

    /// `send` with the line encoded already.
    package func send(_ line: Line, fds: [Int32] = []) throws(IceboxError) {
        do { try UnixSocket.send(fd, line.bytes, fds: fds) } catch {
            if error.errno == EPIPE || error.errno == ECONNRESET {
                reset = true
                ended = true
            }
            if let said = finalReplyAfterClose() {
                let text = said.text.map { String($0.trimmingPrefix("icebox: ")) }
                throw IceboxError(
                    ExitCode(rawValue: said.code ?? 1) ?? .failure, text ?? "the icebox daemon refused \(line.commandName)")
            }
            throw IceboxError(.unavailable, "cannot talk to the icebox daemon: \(error)")
        }
    }

    /// The `done` reply a daemon sent before it closed the connection, if it sent one: read
    /// from what is left in our receive buffer (a closed peer's last bytes stay readable).
    private func finalReplyAfterClose() -> ControlReply? {
        let deadline = Clock.monotonicNanos().saturatingAdd(200_000_000)
        while true {
            while let reply = bufferedReply() {
                if reply.kind == .done || reply.kind == .exit { return reply }
            }
            // Documented: nil when no final reply came in time, a failed wait or read included
            // (the caller reports the lost connection).
            guard (try? Poll.wait(fd, events: Int16(POLLIN), until: deadline)) ?? 0 != 0, (try? readAvailable()) == true else { return nil }
        }
    }

    /// Whether a complete reply line is already buffered (so a poll loop need not wait).
    package var hasBufferedLine: Bool { nextNewline() != nil }

    /// The index of the first newline in `buffer`, searching only what was not searched before.
    private func nextNewline() -> Int? {
        let start = searched
        let found = buffer.withUnsafeBytes { bytes -> Int? in
            guard let base = bytes.baseAddress, bytes.count > start,
                let hit = memchr(base + start, 10, bytes.count - start)
            else { return nil }
            return base.distance(to: UnsafeRawPointer(hit))
        }
        searched = found ?? buffer.count
        return found
    }

    /// Set, a `data` reply that holds apps and nothing else is not decoded: its array's text is
    /// handed here as it came, and the reply returned without apps. For `ps --json`, which
    /// prints it as it is (decoding and re-encoding 1000 records was most of its time).
    package var rawApps: ((String) -> Void)?

    /// Whether a `line` reply's `event` is decoded (IceboxClient's typed results need it); the
    /// CLI, which prints the line, sets it false.
    package var readsLineEvents = true

    /// The next buffered reply, if a complete line is there. Lines that do not decode (a
    /// newer daemon's reply kinds) are skipped.
    package func bufferedReply() -> ControlReply? {
        while let newline = nextNewline() {
            if let rawApps, let span = Self.appsArray(in: buffer[..<newline]) {
                rawApps(String(decoding: buffer[span], as: UTF8.self))
                buffer.removeSubrange(...newline)
                searched = 0
                return ControlReply(kind: .data)
            }
            // Read from the buffer; a String of the line only for JSONDecoder (not the plain form).
            let reply =
                buffer.withUnsafeBytes {
                    JSONReader.read(UnsafeRawBufferPointer(rebasing: $0[..<newline])) {
                        ControlReply(json: &$0, lineEvents: readsLineEvents)
                    }
                }
                ?? JSONLines.decode(ControlReply.self, String(decoding: buffer[..<newline], as: UTF8.self))
            buffer.removeSubrange(...newline)
            searched = 0
            if let reply { return reply }
        }
        return nil
    }

    /// Where the array is in a line that is exactly `{"apps":[…],"kind":"data"}` (as the
    /// daemon's writer orders it, no spaces); nil for any other line. Its end is found by bracket
    /// depth outside strings, so a line with anything more is not taken for one.
    static func appsArray(in line: ArraySlice<UInt8>) -> Range<Int>? {
        let head = Array(#"{"apps":["#.utf8), tail = Array(#","kind":"data"}"#.utf8)
        guard line.count >= head.count + tail.count, line.starts(with: head), line.suffix(tail.count).elementsEqual(tail)
        else { return nil }
        let start = line.startIndex + head.count - 1  // the [
        var depth = 0, inString = false, escaped = false
        var i = start
        while i < line.endIndex - tail.count {
            let byte = line[i]
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            } else if byte == UInt8(ascii: "[") || byte == UInt8(ascii: "{") {
                depth += 1
            } else if byte == UInt8(ascii: "]") || byte == UInt8(ascii: "}") {
                depth -= 1
                if depth == 0 { return i == line.endIndex - tail.count - 1 ? start..<(i + 1) : nil }
            }
            i += 1
        }
        return nil
    }

    /// Reads what the socket holds; call it once poll said it is readable, or it blocks.
    /// Returns false when the daemon closed the connection.
    package func readAvailable() throws(IceboxError) -> Bool {
        let chunk = readRoom ?? UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
        readRoom = chunk
        let n = retryingOnInterrupt { read(fd, chunk.baseAddress, chunk.count) }
        if n < 0 {
            if errno == ECONNRESET {
                reset = true
                ended = true
                return false
            }
            let error = systemCallError("read from the control socket", path: nil, errno: errno)
            throw IceboxError(.unavailable, "cannot read from the icebox daemon: \(error)")
        }
        if n == 0 {
            ended = true
            return false
        }
        received = true
        buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[0..<n]))
        // 4 KiB holds a one-shot command's replies (64 KiB cost every command a brk to grow
        // the heap and one to shrink it); a read that fills it means a long reply: 64 KiB next.
        if n == chunk.count, chunk.count < 65536 {
            chunk.deallocate()
            readRoom = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 16)
        }
        return true
    }

    /// The next reply, waiting for it until `deadline` (monotonic ns); nil when the daemon
    /// closed the connection. Throws if the deadline passes first.
    package func next(until deadline: UInt64, what: String) throws(IceboxError) -> ControlReply? {
        while true {
            if let reply = bufferedReply() { return reply }
            if try !readMore(until: deadline, what: what) { return nil }
        }
    }

    /// `next` with the connection's end thrown rather than returned as nil: a loop over an
    /// optional reply (or bufferedReply's nil before a line is there) was destroyed through
    /// ControlReply?'s type metadata, instantiated on every one-shot command for that.
    private func nextOrClosed(until deadline: UInt64, what: String) throws(IceboxError) -> ControlReply {
        while true {
            if hasBufferedLine, let reply = bufferedReply() { return reply }
            if try !readMore(until: deadline, what: what) {
                throw IceboxError(
                    .daemonWentAway, "the icebox daemon closed the connection before it finished \(what)",
                    hint: "it may or may not have been done: list the apps to see where they stand")
            }
        }
    }

    /// Waits until the daemon sends more (or `deadline` passes: thrown) and reads it; false
    /// when the daemon closed the connection.
    private func readMore(until deadline: UInt64, what: String) throws(IceboxError) -> Bool {
        let ready: Int16
        do { ready = try Poll.wait(fd, events: Int16(POLLIN), until: deadline) } catch {
            throw IceboxError(.failure, "wait for the icebox daemon: \(error)")
        }
        if ready == 0 {
            throw IceboxError(
                .daemonUnavailable, "the icebox daemon did not finish \(what) in time",
                hint: "it may still be working on it; its event log says what it did")
        }
        return try readAvailable()
    }

    /// Reads replies until `done` or `exit`, handing every other one to `handle`; returns the final
    /// reply's code (1 if none). Throws if the connection closes first or the deadline passes.
    package func replies(until deadline: UInt64, what: String, _ handle: (ControlReply) -> Void) throws(IceboxError) -> Int32 {
        var reason: IceboxError.Reason.Wire?
        return try replies(until: deadline, what: what, reason: &reason, handle)
    }

    /// `replies`, with the final reply's typed reason (its `reason` member, if any) in `reason`.
    package func replies(
        until deadline: UInt64, what: String, reason: inout IceboxError.Reason.Wire?, _ handle: (ControlReply) -> Void
    ) throws(IceboxError) -> Int32 {
        while true {
            let reply = try nextOrClosed(until: deadline, what: what)
            switch reply.kind {
            case .done, .exit:
                reason = reply.reason
                // A refusal comes as a `done` with its reason: the reason is for the user.
                if let text = reply.text, reply.code ?? 1 != 0 { handle(ControlReply(kind: .warning, text: text)) }
                return reply.code ?? 1
            case .line, .warning, .event, .data: handle(reply)
            }
        }
    }

    /// How long a request may take: `base`, plus the time-outs the request itself carries
    /// (a launch waits for readiness, a terminate for its SIGKILL time-out). Saturating.
    package static func budget(for request: ControlRequest, base: UInt64) -> UInt64 {
        let defaultTimeout: UInt64 = 10_000_000_000
        let extra: UInt64
        switch request {
        // A launch that times out waiting for readiness answers once the app is gone.
        case .launch(let options): extra = options.readyTimeoutNanos.saturatingAdd(defaultTimeout)
        case .terminate(_, let timeout), .stop(_, let timeout): extra = timeout ?? defaultTimeout
        case .resume(_, let waitReady): extra = waitReady ? 3 * defaultTimeout : 0
        default: extra = 0
        }
        return base.saturatingAdd(extra)
    }

    /// The deadline (monotonic ns) for the replies to `request` sent now: see `budget`.
    package static func deadline(for request: ControlRequest, base: UInt64) -> UInt64 {
        Clock.monotonicNanos().saturatingAdd(budget(for: request, base: base))
    }
}

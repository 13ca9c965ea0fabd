import Glibc

/// One HTTP readiness check as a non-blocking state machine, driven by the caller's poll or epoll
/// loop: connect → send `GET path HTTP/1.1` → read the status line. Nothing here blocks or sleeps,
/// so the daemon runs checks inside its single event loop for every app at once, and
/// `ReadinessCheck.http` drives the same machine with poll for `icebox probe`. Every read is
/// bounded (`HTTPStatusLine.maxLength`); how long a check may take is the caller's deadline. The
/// socket is closed when the check finishes, on `cancel()`, or in deinit. One owner drives it, on
/// one thread.
package final class HTTPProbe {
    package enum Outcome: Equatable, Sendable, CustomStringConvertible {
        /// The server sent a status line (ready if it is 2xx).
        case answered(HTTPStatusLine)
        /// No status line: refused, reset, closed early, not HTTP, or too long. The text says which.
        case failed(String)

        package var isReady: Bool {
            if case .answered(let line) = self { return line.isSuccess }
            return false
        }

        package var description: String {
            switch self {
            case .answered(let line): return "answered \(line)"
            case .failed(let why): return why
            }
        }
    }

    package enum Step: Equatable, Sendable {
        /// Call `resume(events:)` once `fd` reports one of `events` or an error. The bits are
        /// epoll's (`EpollEvents`), which on Linux equal poll's (EPOLLIN == POLLIN, ...).
        case wait(fd: Int32, events: UInt32)
        case finished(Outcome)
    }

    private enum Phase { case idle, connecting, sending(sent: Int), receiving }

    package let url: HTTPURL
    private let request: [UInt8]
    private var phase = Phase.idle
    private var socket: Int32 = -1
    private var received: [UInt8] = []

    package init(url: HTTPURL) {
        self.url = url
        request = Array(url.readinessRequest.utf8)
    }

    deinit { cancel() }

    /// The socket of the check in flight; nil when none is.
    package var fd: Int32? { socket >= 0 ? socket : nil }

    private var endpoint: String { "\(url.address):\(url.port)" }

    /// Starts a check, abandoning one in flight.
    package func start() -> Step {
        cancel()
        do {
            socket = try TCPProbe.start(url.address, port: url.port)
        } catch {
            return .finished(.failed(error.description))
        }
        phase = .connecting
        return .wait(fd: socket, events: EpollEvents.writable)
    }

    /// Goes on once the descriptor fired; `events` as the poll reported them. It may move
    /// to the next phase in the same call (connected → sending → receiving).
    package func resume(events: UInt32) -> Step {
        switch phase {
        case .idle: return .finished(.failed("no check in flight"))
        case .connecting:
            switch TCPProbe.state(socket) {
            case .connected:
                phase = .sending(sent: 0)
                return send()
            case .failed(let err):
                return finish(.failed(SystemError("connect to", path: endpoint, errno: err).description))
            case .inProgress:
                if events & (EpollEvents.error | EpollEvents.hangup) != 0 {
                    return finish(.failed("cannot connect to \(endpoint): the connection closed"))
                }
                return .wait(fd: socket, events: EpollEvents.writable)
            }
        case .sending: return send()
        case .receiving: return receive()
        }
    }

    /// Abandons the check in flight (closing its socket); never waits.
    package func cancel() {
        // close is never retried: on EINTR the descriptor is gone all the same.
        if socket >= 0 { close(socket) }
        socket = -1
        phase = .idle
        received = []
    }

    private func finish(_ outcome: Outcome) -> Step {
        cancel()
        return .finished(outcome)
    }

    private func send() -> Step {
        guard case .sending(var sent) = phase else { return finish(.failed("no request to send")) }
        while sent < request.count {
            let n = request.withUnsafeBytes { bytes in
                retryingOnInterrupt { Glibc.send(socket, bytes.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            }
            if n < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK {
                    phase = .sending(sent: sent)
                    return .wait(fd: socket, events: EpollEvents.writable)
                }
                return finish(.failed(systemCallError("send the request to", path: endpoint, errno: errno).description))
            }
            sent += n
        }
        phase = .receiving
        return receive()
    }

    private func receive() -> Step {
        while true {
            // Never more than the status line's limit in all: scan fails once it is reached.
            var chunk = [UInt8](repeating: 0, count: HTTPStatusLine.maxLength - received.count)
            let n = chunk.withUnsafeMutableBytes { bytes in retryingOnInterrupt { recv(socket, bytes.baseAddress, bytes.count, 0) } }
            if n < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK { return .wait(fd: socket, events: EpollEvents.readable) }
                return finish(.failed(systemCallError("read the answer from", path: endpoint, errno: errno).description))
            }
            received.append(contentsOf: chunk[0..<n])
            switch HTTPStatusLine.scan(received, atEnd: n == 0) {
            case .incomplete: continue
            case .complete(let line): return finish(.answered(line))
            case .malformed(let why): return finish(.failed("\(endpoint): \(why)"))
            }
        }
    }
}

import Glibc
import IceboxSystem
import IceboxTestSupport
import Testing

@testable import IceboxCore

/// Readiness probes against real loopback servers and real probe commands, driven the way
/// the daemon drives them: one thread, one poll loop. The server runs in the same loop, so
/// a probe that blocked would starve it and never finish.
@Suite("readiness probes", .serialized, .timeLimit(.minutes(5)))
struct ReadinessProbeTests {
    enum Result: Equatable {
        case ready
        case notReady
        /// Still waiting at its `attemptDeadline` (the daemon then cancels and retries).
        case pastDeadline
    }

    static let environment = ["PATH=/usr/local/bin:/usr/bin:/bin"]

    /// One attempt, from `start` until it settles or its deadline passes.
    static func attempt(_ probe: ReadinessProbe, server: LoopbackServer? = nil) -> Result {
        var step = probe.start(environment: environment, cwd: nil)
        while true {
            switch step {
            case .ready:
                return .ready
            case .notReady:
                return .notReady
            case .wait(let fd, let events):
                #expect(probe.watchedFD == fd)
                guard let deadline = probe.attemptDeadline else {
                    Issue.record("an attempt in flight must have a deadline")
                    return .notReady
                }
                let now = Clock.monotonicNanos()
                if now >= deadline { return .pastDeadline }
                var fds = [pollfd(fd: fd, events: Int16(truncatingIfNeeded: events), revents: 0)] + (server?.pollDescriptors ?? [])
                _ = poll(&fds, nfds_t(fds.count), Int32(min((deadline - now) / 1_000_000 + 1, 100)))
                server?.pump()
                if fds[0].revents != 0 { step = probe.resume(events: UInt32(UInt16(bitPattern: fds[0].revents))) }
            }
        }
    }

    static let ipv6Reason: String? = LoopbackServer(.silent, ipv6: true) == nil ? "no IPv6 loopback (::1) on this host" : nil

    @Test("http: a 2xx answer is ready; the request is GET path HTTP/1.1 with Host and Connection: close")
    func httpReady() throws {
        let server = try #require(LoopbackServer(.answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")))
        let probe = ReadinessProbe(mode: .http("http://127.0.0.1:\(server.port)/health?deep=1"))
        #expect(Self.attempt(probe, server: server) == .ready)
        #expect(probe.watchedFD == nil && probe.attemptDeadline == nil)
        let request = try #require(server.requests.first)
        #expect(request.hasPrefix("GET /health?deep=1 HTTP/1.1\r\n"))
        #expect(request.contains("\r\nHost: 127.0.0.1:\(server.port)\r\n"))
        #expect(request.contains("\r\nConnection: close\r\n"))
    }

    @Test("http over IPv6 loopback: http://[::1]:PORT/", .enabled(if: ipv6Reason == nil, "\(ipv6Reason ?? "")"))
    func httpIPv6() throws {
        let server = try #require(LoopbackServer(.answer("HTTP/1.0 204 No Content\r\n\r\n"), ipv6: true))
        #expect(Self.attempt(ReadinessProbe(mode: .http("http://[::1]:\(server.port)/")), server: server) == .ready)
        #expect(server.requests.first?.contains("\r\nHost: [::1]:\(server.port)\r\n") == true)
    }

    /// Answers that must not count as ready, named so the test log stays readable.
    enum BadAnswer: String, CaseIterable, CustomTestStringConvertible {
        case unavailable = "503"
        case redirect = "301"
        case notHTTP = "not HTTP"
        case closedWithoutAWord = "closed without a word"
        case endlessFirstLine = "a first line with no end in sight"

        var testDescription: String { rawValue }

        var bytes: String {
            switch self {
            case .unavailable: return "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"
            case .redirect: return "HTTP/1.1 301 Moved Permanently\r\nLocation: /x\r\n\r\n"
            case .notHTTP: return "SSH-2.0-OpenSSH_9.6\r\n"
            case .closedWithoutAWord: return ""
            case .endlessFirstLine: return "HTTP/1.1 200 " + String(repeating: "x", count: 2 * HTTPStatusLine.maxLength)
            }
        }
    }

    @Test("http: anything but a 2xx status line is a failed attempt", arguments: BadAnswer.allCases)
    func httpNotReady(_ answer: BadAnswer) throws {
        let server = try #require(LoopbackServer(.answer(answer.bytes)))
        let probe = ReadinessProbe(mode: .http("http://127.0.0.1:\(server.port)/"))
        #expect(Self.attempt(probe, server: server) == .notReady)
        #expect(server.requests.count == 1)
        #expect(probe.watchedFD == nil && probe.attemptDeadline == nil)
    }

    @Test("http: a server that accepts and never answers: the attempt passes its deadline; cancel closes it")
    func httpSilent() throws {
        let server = try #require(LoopbackServer(.silent))
        let probe = ReadinessProbe(mode: .http("http://127.0.0.1:\(server.port)/"), attemptTimeout: 200_000_000)
        let start = Clock.monotonicNanos()
        #expect(Self.attempt(probe, server: server) == .pastDeadline)
        #expect(Clock.monotonicNanos() - start >= 200_000_000)
        #expect(server.requests.count == 1, "the request went out; only the answer is missing")
        #expect(probe.watchedFD != nil)
        probe.cancel()
        #expect(probe.watchedFD == nil && probe.attemptDeadline == nil)
        let closed = eventually {
            server.pump()
            return server.closedByClient == 1
        }
        #expect(closed, "the probe's socket must be closed")
    }

    @Test("tcp: a listening port is ready")
    func tcpReady() throws {
        let server = try #require(LoopbackServer(.silent))
        #expect(Self.attempt(ReadinessProbe(mode: .tcp(server.port)), server: server) == .ready)
    }

    @Test("nothing listening: tcp and http are not ready")
    func nothingListening() throws {
        let port = try #require(freeLoopbackPort())
        #expect(Self.attempt(ReadinessProbe(mode: .tcp(port))) == .notReady)
        #expect(Self.attempt(ReadinessProbe(mode: .http("http://127.0.0.1:\(port)/"))) == .notReady)
        #expect(Self.attempt(ReadinessProbe(mode: .http("http://localhost:\(port)/"))) == .notReady)
    }

    @Test("cmd: exit 0 is ready, anything else is not; read through its pidfd")
    func commandExit() {
        #expect(Self.attempt(ReadinessProbe(mode: .command("exit 0"))) == .ready)
        #expect(Self.attempt(ReadinessProbe(mode: .command("exit 3"))) == .notReady)
        #expect(Self.attempt(ReadinessProbe(mode: .command("kill -9 $$"))) == .notReady)
    }

    /// Whether this process holds descriptor `fd` as a pidfd of `pid` (a closed number may be
    /// reused at once by another test's descriptor, so "closed" is checked as "not that").
    static func holdsPidfd(_ fd: Int32, of pid: pid_t) -> Bool {
        readFile("/proc/self/fdinfo/\(fd)")?.contains("Pid:\t\(pid)\n") == true
    }

    @Test("cmd: cancel() kills the probe's process group and closes its pidfd without waiting; the child is left to reap")
    func commandCancel() throws {
        // The leader execs one sleep after starting another in the background, in its group.
        let probe = ReadinessProbe(mode: .command("sleep 100 & exec sleep 100"))
        guard case .wait(let pidfd, _) = probe.start(environment: Self.environment, cwd: nil) else {
            Issue.record("a running probe command must be waited on")
            return
        }
        let pid = try #require(probe.childPID)
        // Our own pidfd on it stands in for the daemon's SIGCHLD handling.
        let reaper = try ProcessHandle(adopting: pid)
        #expect(Self.holdsPidfd(pidfd, of: pid))
        #expect(eventually { ProcFS.pids(inSession: pid).count == 2 }, "both sleeps should be running")
        let group = ProcFS.pids(inSession: pid)

        let start = Clock.monotonicNanos()
        probe.cancel()
        let elapsed = Clock.monotonicNanos() - start
        print("cancel() of a running cmd probe returned in \(DurationText.format(elapsed))")
        #expect(elapsed < 250_000_000, "cancel must not wait for the probe to die")
        #expect(probe.childPID == nil && probe.watchedFD == nil && probe.attemptDeadline == nil)
        #expect(!Self.holdsPidfd(pidfd, of: pid), "the probe's pidfd must be closed")

        // cancel did not reap it: its status is still there for the reaper, and it was SIGKILL.
        #expect(try reaper.wait(until: Clock.monotonicNanos() + 10_000_000_000) == .signaled(SIGKILL))
        #expect(ProcFS.stat(pid: pid) == nil, "reaped: no zombie left")
        // The background sleep went with the group (reparented, it is gone or its new parent's zombie).
        for other in group where other != pid {
            #expect(eventually { (ProcFS.stat(pid: other)?.state ?? "Z") == "Z" }, "pid \(other) survived")
        }
    }
}

import IceboxCore
import IceboxTestSupport
import Testing

/// The typed reasons of errors: their exit codes, their wire form (the `reason` member of a
/// `done` reply), and the client rebuilding them from a daemon's reply. No root needed.
@Suite(.timeLimit(.minutes(5)))
struct IceboxErrorReasonTests {
    /// One of every case.
    static let all: [IceboxError.Reason] = [
        .noSuchApp(name: "ghost"), .wrongState(name: "web", state: .exited), .busy(name: "web", state: .launching),
        .nameTaken(name: "web"), .permissionDenied,
        .freezeFailed(name: "web", timedOut: true, stuckPIDs: [41, 42]), .freezeFailed(name: "web", timedOut: false, stuckPIDs: []),
        .commandNotFound(command: "nope"), .commandNotExecutable(command: "/etc/passwd"), .daemonUnavailable, .daemonWentAway,
        .recordNotWritten, .badRequest, .other(.failure), .other(.unavailable),
    ]

    @Test("each reason has its exit code: the CLI's codes follow from the reasons")
    func exitCodes() {
        let codes = Self.all.map(\.exitCode)
        let expected: [ExitCode] = [
            .failure, .failure, .tryAgain, .failure, .permission, .failure, .failure, .notFound, .notExecutable, .unavailable,
            .failure, .ioError, .usage, .failure, .unavailable,
        ]
        #expect(codes == expected)
        for reason in Self.all {
            #expect(IceboxError(reason, "m").code == reason.exitCode)
        }
    }

    @Test("an error made with a code only: the reason that code always means, else other")
    func fromCode() {
        #expect(IceboxError(.permission, "m").reason == .permissionDenied)
        #expect(IceboxError(.usage, "m").reason == .badRequest)
        #expect(IceboxError(.ioError, "m").reason == .recordNotWritten)
        #expect(IceboxError(.failure, "m").reason == .other(.failure))
        #expect(IceboxError(.notFound, "m").reason == .other(.notFound))
        for code in [ExitCode.success, .failure, .usage, .unavailable, .ioError, .tryAgain, .permission, .notExecutable, .notFound] {
            #expect(IceboxError(code, "m").code == code)
        }
        // Setting another code makes the reason other; the same code keeps it.
        var error = IceboxError(.noSuchApp(name: "x"), "m")
        error.code = .failure
        #expect(error.reason == .noSuchApp(name: "x"))
        error.code = .unavailable
        #expect(error.reason == .other(.unavailable))
    }

    @Test("the wire form: a done reply's reason, written and read back (plain reader and JSONDecoder) for every case")
    func wire() throws {
        for reason in Self.all {
            var reply = ControlReply(kind: .done, code: reason.exitCode.rawValue)
            reply.reason = reason.wire
            let line = JSONLines.encode(reply)
            let plain = try #require(JSONLines.decode(ControlReply.self, line), "\(line)")
            let foundation = try JSONLines.decodeWithFoundation(ControlReply.self, line)
            for read in [plain, foundation] {
                if case .other = reason {
                    #expect(read.reason == nil, "other is not sent: \(line)")
                } else {
                    #expect(read.reason.flatMap(IceboxError.Reason.init(wire:)) == reason, "\(line)")
                }
            }
        }
        var reply = ControlReply(kind: .done, code: 1)
        reply.reason = IceboxError.Reason.freezeFailed(name: "web", timedOut: true, stuckPIDs: [41, 42]).wire
        #expect(
            JSONLines.encode(reply)
                == #"{"code":1,"kind":"done","reason":{"app":"web","kind":"freeze_failed","pids":[41,42],"timed_out":true}}"#)
        reply.code = 75
        reply.reason = IceboxError.Reason.busy(name: "web", state: .launching).wire
        #expect(JSONLines.encode(reply) == #"{"code":75,"kind":"done","reason":{"app":"web","kind":"busy","state":"launching"}}"#)
    }

    @Test("a reply's reason reaches the client's error; an unknown or contradicting one falls back on the code")
    func client() throws {
        func failing(_ code: Int32, _ reasonJSON: String?) throws -> IceboxError? {
            var reply = ControlReply(kind: .done, code: code)
            if let reasonJSON {
                reply.reason = try #require(JSONLines.decode(ControlReply.self, #"{"kind":"done","reason":\#(reasonJSON)}"#)?.reason)
            }
            return try FakeDaemon.answering([ControlReply(kind: .warning, text: "icebox: no"), reply]) { client in
                #expect(throws: IceboxError.self) { try client.suspend("ghost") }
            }
        }
        #expect(try failing(1, #"{"kind":"no_such_app","app":"ghost"}"#)?.reason == .noSuchApp(name: "ghost"))
        #expect(try failing(75, #"{"kind":"busy","app":"w","state":"launching"}"#)?.reason == .busy(name: "w", state: .launching))
        #expect(try failing(1, #"{"kind":"a_newer_kind","app":"ghost"}"#)?.reason == .other(.failure))
        #expect(try failing(77, #"{"kind":"no_such_app","app":"ghost"}"#)?.reason == .permissionDenied, "the code wins")
        #expect(try failing(1, nil)?.reason == .other(.failure), "an old daemon")
        #expect(try failing(64, nil)?.reason == .badRequest)
    }

    @Test("the client's own failures: no daemon is unavailable, a hang-up is went-away")
    func clientSide() throws {
        let dir = makeTemporaryDirectory("client")
        defer { removeTree(dir) }
        let none = #expect(throws: IceboxError.self) { try IceboxClient(runtimeDirectory: dir, stateDirectory: dir).apps() }
        #expect(none?.reason == .daemonUnavailable)
        let hangUp = try FakeDaemon.answering([ControlReply(kind: .line, text: "half")]) { client in
            #expect(throws: IceboxError.self) { try client.evict("web") }
        }
        #expect(hangUp?.reason == .daemonWentAway)
        #expect(hangUp?.code == .failure)
    }
}

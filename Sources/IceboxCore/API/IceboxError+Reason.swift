extension IceboxError {
    /// What went wrong, typed: what a test matches on, where the CLI has an exit code.
    ///
    /// The exit code follows from the reason (``exitCode``), not the other way round. The
    /// daemon sends the reason with its error reply (the `reason` member of the final
    /// `done` reply, docs/protocol.md), and ``IceboxClient`` and ``Supervisor`` rebuild it,
    /// so a test sees the same reason whether the engine runs in its process or in a daemon.
    ///
    /// ```swift
    /// do {
    ///     _ = try supervisor.launch(LaunchOptions(name: "x", command: ["no-such-program"]))
    /// } catch let error {
    ///     guard case .commandNotFound(let command) = error.reason else { throw error }
    ///     #expect(command == "no-such-program")
    /// }
    /// ```
    public enum Reason: Sendable, Hashable {
        /// No app of that name, running or ended. Exit code 1.
        case noSuchApp(name: String)
        /// The app is in a state the request cannot apply to, and waiting alone will not
        /// change that: a suspend, resume, terminate or evict of an app that has ended
        /// (exited, terminated, evicted), a relaunch or forget of one that runs. Exit code 1.
        case wrongState(name: String, state: AppState)
        /// The app is in a state the request cannot apply to yet (it is launching, in its
        /// grace, or a freeze, thaw or end is under way): the same request may succeed
        /// later. Exit code 75 (``ExitCode/tryAgain``).
        case busy(name: String, state: AppState)
        /// An app of that name is already running. Exit code 1.
        case nameTaken(name: String)
        /// The kernel or the daemon refused for lack of permission (a cgroup not delegated,
        /// another user's daemon or process, a missing capability). Exit code 77.
        case permissionDenied
        /// The freeze did not complete and was rolled back: the app runs. `timedOut` when the
        /// kernel did not confirm it in time; `stuckPIDs` are the processes with a task that
        /// did not freeze, when known (a task in D state is the usual cause). Exit code 1.
        case freezeFailed(name: String, timedOut: Bool, stuckPIDs: [Int32])
        /// A launch's program could not be found (PATH, or the path given). Exit code 127.
        case commandNotFound(command: String)
        /// A launch's program was found but could not be run (no execute permission, not
        /// an executable, a working directory the app cannot enter). Exit code 126.
        case commandNotExecutable(command: String)
        /// No daemon answers on the control socket, or it did not answer in time. Exit
        /// code 69.
        case daemonUnavailable
        /// The daemon closed the connection before it finished the request (it stopped or
        /// died): the request may or may not have been done, so look (``IceboxClient/apps(all:)-5ebi5``).
        /// Exit code 1.
        case daemonWentAway
        /// The daemon could not write the app's record (its registry, a state file): nothing
        /// was done. Exit code 74.
        case recordNotWritten
        /// A malformed request or a bad argument (an invalid name, an empty command, an
        /// unknown option). Exit code 64.
        case badRequest
        /// Any other failure, with its exit code.
        case other(ExitCode)

        /// The exit code the CLI exits with for this reason.
        public var exitCode: ExitCode {
            switch self {
            case .noSuchApp, .wrongState, .nameTaken, .freezeFailed, .daemonWentAway: return .failure
            case .busy: return .tryAgain
            case .permissionDenied: return .permission
            case .commandNotFound: return .notFound
            case .commandNotExecutable: return .notExecutable
            case .daemonUnavailable: return .unavailable
            case .recordNotWritten: return .ioError
            case .badRequest: return .usage
            case .other(let code): return code
            }
        }

        /// The reason an exit code alone stands for: those that mean one thing only
        /// (permission, usage, a state file), else ``other(_:)`` with it.
        public init(code: ExitCode) {
            switch code {
            case .permission: self = .permissionDenied
            case .usage: self = .badRequest
            case .ioError: self = .recordNotWritten
            default: self = .other(code)
            }
        }
    }
}

// MARK: On the wire

extension IceboxError.Reason {
    /// The `kind` of a reason on the wire (docs/protocol.md); nil for ``other(_:)``, which
    /// is not sent (the `done` reply's `code` says it all).
    package var wireKind: String? {
        switch self {
        case .noSuchApp: return "no_such_app"
        case .wrongState: return "wrong_state"
        case .busy: return "busy"
        case .nameTaken: return "name_taken"
        case .permissionDenied: return "permission_denied"
        case .freezeFailed: return "freeze_failed"
        case .commandNotFound: return "command_not_found"
        case .commandNotExecutable: return "command_not_executable"
        case .daemonUnavailable: return "daemon_unavailable"
        case .daemonWentAway: return "daemon_went_away"
        case .recordNotWritten: return "record_not_written"
        case .badRequest: return "bad_request"
        case .other: return nil
        }
    }

    /// The members of a reason on the wire, flat, beside its `kind`.
    package struct Wire: Sendable, Equatable {
        var kind: String
        var app: String?
        var state: AppState?
        var command: String?
        var timedOut: Bool?
        var pids: [Int32]?
    }

    package var wire: Wire? {
        guard let kind = wireKind else { return nil }
        var w = Wire(kind: kind)
        switch self {
        case .noSuchApp(let name), .nameTaken(let name): w.app = name
        case .wrongState(let name, let state), .busy(let name, let state):
            w.app = name
            w.state = state
        case .freezeFailed(let name, let timedOut, let pids):
            w.app = name
            w.timedOut = timedOut
            w.pids = pids
        case .commandNotFound(let command), .commandNotExecutable(let command): w.command = command
        case .permissionDenied, .daemonUnavailable, .daemonWentAway, .recordNotWritten, .badRequest, .other: break
        }
        return w
    }

    /// The reason a wire form names; nil for a kind this client does not know (a newer
    /// daemon's) or one that lacks a member it needs: the caller falls back on the code.
    package init?(wire w: Wire) {
        switch w.kind {
        case "no_such_app": guard let app = w.app else { return nil }; self = .noSuchApp(name: app)
        case "wrong_state":
            guard let app = w.app, let state = w.state else { return nil }
            self = .wrongState(name: app, state: state)
        case "busy":
            guard let app = w.app, let state = w.state else { return nil }
            self = .busy(name: app, state: state)
        case "name_taken": guard let app = w.app else { return nil }; self = .nameTaken(name: app)
        case "permission_denied": self = .permissionDenied
        case "freeze_failed":
            guard let app = w.app else { return nil }
            self = .freezeFailed(name: app, timedOut: w.timedOut ?? false, stuckPIDs: w.pids ?? [])
        case "command_not_found": guard let c = w.command else { return nil }; self = .commandNotFound(command: c)
        case "command_not_executable": guard let c = w.command else { return nil }; self = .commandNotExecutable(command: c)
        case "daemon_unavailable": self = .daemonUnavailable
        case "daemon_went_away": self = .daemonWentAway
        case "record_not_written": self = .recordNotWritten
        case "bad_request": self = .badRequest
        default: return nil
        }
    }
}

extension IceboxError.Reason.Wire: JSONWritable {
    package func writeJSON(to w: inout JSONWriter) {
        w.object { w in
            w.field("app", app)
            w.field("command", command)
            w.field("kind", kind)
            w.field("pids", pids)
            w.field("state", state)
            if let timedOut { w.field("timed_out", timedOut) }
        }
    }
}

extension IceboxError.Reason.Wire: JSONReadable {
    package init?(json r: inout JSONReader) {
        var kind: String?, app: String?, state: AppState?, command: String?, timedOut: Bool?, pids: [Int32]?
        let read = r.object { r, key in
            switch key {
            case "kind": return r.field(&kind)
            case "app": return r.field(&app)
            case "state": return r.field(&state)
            case "command": return r.field(&command)
            case "timed_out": return r.field(&timedOut)
            case "pids": return r.field(&pids)
            default: return false  // left to JSONDecoder, which skips it
            }
        }
        guard read, let kind else { return nil }
        self.init(kind: kind, app: app, state: state, command: command, timedOut: timedOut, pids: pids)
    }
}

extension IceboxError.Reason.Wire: Codable {
    enum CodingKeys: String, CodingKey {
        case kind, app, state, command, timedOut, pids
    }
}

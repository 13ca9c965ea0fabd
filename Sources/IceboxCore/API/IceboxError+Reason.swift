extension IceboxError {
    /// What went wrong, typed: what a test matches on, where the CLI has an exit code.
    ///
    /// The exit code follows from the reason (``exitCode``). The daemon sends the reason with
    /// its error reply (the final `done` reply's `reason`), and ``IceboxClient`` and
    /// ``Supervisor`` rebuild it: a test sees the same reason from either.
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
        /// The app is in a state the request cannot apply to, and waiting will not change that: a
        /// suspend, resume, terminate or evict of an ended app, a relaunch or forget of one that
        /// runs. Exit code 1.
        case wrongState(name: String, state: AppState)
        /// The app is in a state the request cannot apply to yet (launching, in its grace, or a
        /// freeze, thaw or end under way): it may succeed later. Exit code 75
        /// (``ExitCode/tryAgain``).
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
        /// No daemon answers on the control socket, or not in time. Exit code 69.
        case daemonUnavailable
        /// The daemon closed the connection before it finished the request (it stopped or died):
        /// the request may or may not have been done, so look (``IceboxClient/apps(all:)-5ebi5``).
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

        /// The reason an exit code alone stands for (permission, usage, a state file), else
        /// ``other(_:)`` with it.
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
    /// The members of a reason on the wire, flat, beside its `kind`.
    package struct Wire: Sendable, Equatable {
        var kind: String
        var app: String?
        var state: AppState?
        var command: String?
        var timedOut: Bool?
        var pids: [Int32]?
    }

    /// The reason on the wire (docs/protocol.md): its `kind` and members; nil for
    /// ``other(_:)``, which is not sent (the `done` reply's `code` says it all).
    package var wire: Wire? {
        switch self {
        case .noSuchApp(let name): return Wire(kind: "no_such_app", app: name)
        case .wrongState(let name, let state): return Wire(kind: "wrong_state", app: name, state: state)
        case .busy(let name, let state): return Wire(kind: "busy", app: name, state: state)
        case .nameTaken(let name): return Wire(kind: "name_taken", app: name)
        case .permissionDenied: return Wire(kind: "permission_denied")
        case .freezeFailed(let name, let timedOut, let pids): return Wire(kind: "freeze_failed", app: name, timedOut: timedOut, pids: pids)
        case .commandNotFound(let command): return Wire(kind: "command_not_found", command: command)
        case .commandNotExecutable(let command): return Wire(kind: "command_not_executable", command: command)
        case .daemonUnavailable: return Wire(kind: "daemon_unavailable")
        case .daemonWentAway: return Wire(kind: "daemon_went_away")
        case .recordNotWritten: return Wire(kind: "record_not_written")
        case .badRequest: return Wire(kind: "bad_request")
        case .other: return nil
        }
    }

    /// The reason a wire form names; nil for a kind this client does not know (a newer
    /// daemon's) or one lacking a member: the caller falls back on the code.
    package init?(wire w: Wire) {
        switch (w.kind, w.app, w.state, w.command) {
        case ("no_such_app", let app?, _, _): self = .noSuchApp(name: app)
        case ("wrong_state", let app?, let state?, _): self = .wrongState(name: app, state: state)
        case ("busy", let app?, let state?, _): self = .busy(name: app, state: state)
        case ("name_taken", let app?, _, _): self = .nameTaken(name: app)
        case ("permission_denied", _, _, _): self = .permissionDenied
        case ("freeze_failed", let app?, _, _): self = .freezeFailed(name: app, timedOut: w.timedOut ?? false, stuckPIDs: w.pids ?? [])
        case ("command_not_found", _, _, let command?): self = .commandNotFound(command: command)
        case ("command_not_executable", _, _, let command?): self = .commandNotExecutable(command: command)
        case ("daemon_unavailable", _, _, _): self = .daemonUnavailable
        case ("daemon_went_away", _, _, _): self = .daemonWentAway
        case ("record_not_written", _, _, _): self = .recordNotWritten
        case ("bad_request", _, _, _): self = .badRequest
        default: return nil
        }
    }
}

extension IceboxError.Reason.Wire: JSONRecord {
    package init(from decoder: any Decoder) throws { try self.init(fieldsFrom: decoder) }

    package func encode(to encoder: any Encoder) throws { try encodeFields(to: encoder) }

    package static let jsonBlank = Self(kind: "")

    package func visitFields<V: JSONFieldVisitor>(_ v: inout V) where V.Root == Self {
        v.optional("app", app) { $0.app = $1 }
        v.optional("command", command) { $0.command = $1 }
        v.required("kind", kind) { $0.kind = $1 }
        v.optional("pids", pids) { $0.pids = $1 }
        v.optional("state", state) { $0.state = $1 }
        v.optional("timed_out", timedOut) { $0.timedOut = $1 }
    }
}

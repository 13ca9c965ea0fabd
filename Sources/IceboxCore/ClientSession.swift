import Glibc
import IceboxCore
import IceboxSystem

/// The client side of the control socket: connect (starting a daemon on demand), send one
/// request, read the replies.
struct DaemonClient {
    let paths: IceboxPaths
    let autostart: Bool
    let cgroupRoot: String?
    /// The daemon this client started, if it did, so it can be reaped if it ends first.
    var startedDaemon: ProcessHandle?
    /// Until when (monotonic ns) this command keeps trying to reach a daemon, set when it
    /// first finds none: every retry of the command (a connect, a resend) shares it.
    var reachDeadline: UInt64?

    /// What to suggest when no daemon runs and none may be started.
    var noDaemonHint = "start one with 'icebox daemon', or drop --no-autostart / ICEBOX_NO_AUTOSTART"

    /// `environment` looks up one variable (this process's: `ProcessEnvironment.value`).
    init(environment: (String) -> String?, autostartFlagOff: Bool, cgroupRoot: String?) {
        paths = IceboxPaths.fromEnvironment(environment)
        autostart = !autostartFlagOff && environment("ICEBOX_NO_AUTOSTART").map { $0.isEmpty || $0 == "0" } ?? true
        self.cgroupRoot = cgroupRoot ?? environment("ICEBOX_CGROUP_ROOT").flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Connects to the daemon, starting one if none runs. Before anything is sent, the
    /// socket must be a socket (not a link) and the daemon this user's (or root's, for
    /// root); with no daemon, the directories must be this user's (`IceboxPaths.verify`).
    /// The first try is the whole of it when a daemon runs; otherwise `reachDaemon` starts
    /// one and rides over a daemon restarting meanwhile (DaemonReach).
    mutating func connect() throws(IceboxError) -> DaemonConnection {
        try DaemonConnection.checkSocketPath(paths.controlSocket)
        do {
            let connection = try DaemonConnection(socket: paths.controlSocket)
            try connection.requireTrustedDaemon(socket: paths.controlSocket)
            connection.readsLineEvents = false  // the CLI prints the lines; their events are the library's
            return connection
        } catch let error as SystemError where error.errno == ENOENT || error.errno == ECONNREFUSED {
            try paths.verify()
            guard autostart else {
                throw IceboxError(.unavailable, "no icebox daemon is running for \(paths.runtimeDir)", hint: noDaemonHint)
            }
        } catch let error as SystemError {
            throw Self.connectFailure(error)
        } catch {
            // requireTrustedDaemon's refusal (the only other error thrown above).
            throw error as? IceboxError ?? IceboxError(.failure, "\(error)")
        }
        return try reachDaemon()
    }

    /// A connect that failed otherwise than for want of a daemon (permission, a path too long).
    static func connectFailure(_ error: SystemError) -> IceboxError {
        IceboxError(
            error.isPermissionDenied ? .permission : .unavailable,
            "cannot reach the icebox daemon: \(error)",
            hint: "set ICEBOX_RUNTIME_DIR to a directory of your own")
    }

    /// Starts `icebox daemon --foreground` and waits (up to 10 s) until it says it listens,
    /// through a pipe it inherits as descriptor 3: no polling of the socket. (For `icebox
    /// daemon`; a command that needs a daemon starts one through `reachDaemon`.)
    mutating func startDaemon() throws(IceboxError) {
        try paths.prepare()
        let starting = try spawnDaemon()
        defer { close(starting.readyFD) }
        startedDaemon = starting.process
        var buffer = [UInt8](repeating: 0, count: 16)
        var pfd = pollfd(fd: starting.readyFD, events: Int16(POLLIN), revents: 0)
        let n = poll(&pfd, 1, 10_000) > 0 ? read(starting.readyFD, &buffer, 16) : 0
        // "busy" with the socket in place: another command started a daemon at the same
        // moment, and that one serves; connect() goes on to it.
        if n > 0 && String(decoding: buffer[0..<n], as: UTF8.self).hasPrefix("busy") && !FileIO.exists(paths.controlSocket) {
            let holder = ((try? FileIO.read(paths.lockFile)) ?? "").trimmed()
            throw IceboxError(
                .unavailable,
                "an icebox daemon (pid \(holder.isEmpty ? "unknown" : holder)) holds \(paths.lockFile) but its control socket \(paths.controlSocket) is gone",
                hint: "stop that daemon (kill -TERM \(holder.isEmpty ? "PID" : holder)) and try again")
        }
        if n <= 0 { throw didNotStart() }
    }

    /// The daemon this command started ended before it said it listens.
    func didNotStart() -> IceboxError {
        let tail = ((try? FileIO.read(paths.daemonLog)) ?? "").split(separator: "\n").suffix(3).joined(separator: "; ")
        return IceboxError(
            .unavailable, "the icebox daemon did not start" + (tail.isEmpty ? "" : ": \(tail)"),
            hint: "see \(paths.daemonLog), or run 'icebox daemon --foreground' to watch it")
    }

    /// A daemon this command started, until it says whether it serves.
    struct StartingDaemon {
        let process: ProcessHandle
        /// The read end of the pipe it says "ready" or "busy" on (its descriptor 3).
        let readyFD: Int32
    }

    /// Spawns `icebox daemon --foreground`, its output to the daemon log, with the write end
    /// of a pipe as descriptor 3 for its word. The directories are prepared already.
    func spawnDaemon() throws(IceboxError) -> StartingDaemon {
        var pipeFDs: [Int32] = [-1, -1]
        do { (pipeFDs[0], pipeFDs[1]) = try PipePair.closeOnExec() } catch { throw IceboxError("start the daemon", error) }
        let logFD = open(paths.daemonLog, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0o600)
        defer { if logFD >= 0 { close(logFD) } }
        var env = ProcessEnvironment.current.filter { !$0.hasPrefix("ICEBOX_READY_FD=") }
        env += ["ICEBOX_READY_FD=3", "ICEBOX_RUNTIME_DIR=\(paths.runtimeDir)", "ICEBOX_STATE_DIR=\(paths.stateDir)"]
        var args = ["icebox", "daemon", "--foreground"]
        if let cgroupRoot { args += ["--cgroup-root", cgroupRoot] }
        var request = SpawnRequest(executable: Spawner.selfExecutable, arguments: args, environment: env)
        request.stdout = logFD
        request.stderr = logFD
        request.extraFD = pipeFDs[1]
        request.workingDirectory = "/"
        let spawned: SpawnedProcess
        do { spawned = try Spawner.spawn(request) } catch {
            close(pipeFDs[0])
            close(pipeFDs[1])
            throw IceboxError(.unavailable, "cannot start the icebox daemon: \(error)")
        }
        close(pipeFDs[1])
        return StartingDaemon(process: spawned.handle, readyFD: pipeFDs[0])
    }

    /// How long a command waits for the daemon beyond the time-outs its request carries.
    /// Generous (an app's grace can be long), but a hung daemon still ends the wait.
    static let replyBudgetNanos: UInt64 = 3_600_000_000_000

    /// The deadline for the replies to `request`, from now.
    static func deadline(for request: ControlRequest) -> UInt64 {
        DaemonConnection.deadline(for: request, base: replyBudgetNanos)
    }

    /// Sends a request and prints the replies until `done`. Returns the exit code.
    mutating func perform(
        _ request: ControlRequest, onData: (([AppRecord]) -> Void)? = nil, onPolicy: ((EvictionPolicy) -> Void)? = nil,
        onSummaries: (([AppSummary]) -> Void)? = nil, rawApps: ((String) -> Void)? = nil
    ) throws(IceboxError) -> Int32 {
        let line = DaemonConnection.Line(request)  // before the connect: see Line
        var connection = try connect()
        while true {
            connection.rawApps = rawApps
            do {
                try connection.send(line)
                return try replies(to: request, on: connection, onData: onData, onPolicy: onPolicy, onSummaries: onSummaries)
            } catch  where mayResend(request, after: connection) {
                // Once more, to the next daemon (started if need be): see mayResend.
                connection = try connect()
            }
        }
    }

    /// Whether `request`, whose connection ended before its final reply, goes once more to
    /// the next daemon. It does when no daemon read it (DaemonConnection.resetUnanswered: one
    /// on its way out, or killed, closed its listener between our connect and its accept),
    /// and, for a request that changes nothing (ControlRequest.isReadOnly), whenever the
    /// daemon went away before a byte of answer (DaemonConnection.endedBeforeAnyReply:
    /// nothing printed, and no refusal, which would only be refused again). A request that
    /// changes something and was read may have been carried out: it is not sent again (a
    /// second suspend could undo a resume another command made since), and fails saying so.
    /// Every resend is within the reach deadline (DaemonReach), set here if no connect set it.
    mutating func mayResend(_ request: ControlRequest, after connection: DaemonConnection) -> Bool {
        guard connection.resetUnanswered || request.isReadOnly && connection.endedBeforeAnyReply else { return false }
        let now = Clock.monotonicNanos()
        let deadline = reachDeadline ?? now.saturatingAdd(Self.reachBudgetNanos)
        reachDeadline = deadline
        return now < deadline
    }

    private func replies(
        to request: ControlRequest, on connection: DaemonConnection, onData: (([AppRecord]) -> Void)?,
        onPolicy: ((EvictionPolicy) -> Void)?, onSummaries: (([AppSummary]) -> Void)?
    ) throws(IceboxError) -> Int32 {
        do {
            return try connection.replies(until: Self.deadline(for: request), what: request.commandName) { reply in
                switch reply.kind {
                // The daemon's lines may quote what an app or another user supplied.
                case .line: if let t = reply.text { Output.out(TerminalText.escaped(t, keepingLayout: true)) }
                case .warning: if let t = reply.text { Output.err(TerminalText.escaped(t, keepingLayout: true)) }
                case .event: if let e = reply.event { Output.err(e.humanLine) }
                case .data:
                    if let policy = reply.policy {
                        onPolicy?(policy)
                    } else if let summaries = reply.summaries {
                        onSummaries?(summaries)
                    } else {
                        onData?(reply.apps ?? [])
                    }
                case .done, .exit: break
                }
            }
        } catch {
            if connection.ended && !connection.resetUnanswered && !request.isReadOnly {
                throw IceboxError(
                    .daemonWentAway,
                    "the icebox daemon went away (it ended or was killed) before it finished \(request.commandName): it may or may not have been done, and is not sent again",
                    hint: "icebox ps (which starts the next daemon) shows where the apps stand; see \(paths.daemonLog)")
            }
            throw IceboxError(error.reason, error.message, hint: error.hint ?? "see \(paths.daemonLog)")
        }
    }
}

import Glibc
import IceboxSystem

/// How the CLI's commands start a daemon when none runs: `icebox daemon --foreground`. A library
/// client never starts one behind a test's back (``IceboxDaemon`` and ``Supervisor`` do, when
/// asked).
package struct DaemonAutostart: Sendable {
    /// The daemon's `--cgroup-root`, if one was given.
    package var cgroupRoot: String?

    package init(cgroupRoot: String? = nil) {
        self.cgroupRoot = cgroupRoot
    }
}

/// One command's (or library call's) way to the daemon: connect (starting a daemon on demand,
/// riding over a restart: ClientSession+Reach), send one request, read the replies until
/// `done`, and send it once more when it provably went unread. The CLI's commands and
/// ``IceboxClient``'s calls both go through it, so every CLI test exercises the library's way.
package struct ClientSession {
    package let paths: IceboxPaths
    /// Set, a command that finds no daemon starts one; nil, it fails (69) with `noDaemonHint`.
    package let autostart: DaemonAutostart?
    /// Whether a `line` reply's event is decoded (DaemonConnection.readsLineEvents).
    package let readsLineEvents: Bool
    /// The daemon this session started, if it did, so it can be reaped if it ends first.
    package var startedDaemon: ProcessHandle?
    /// Until when (monotonic ns) this session keeps trying to reach a daemon, set when it first
    /// finds none: every retry (a connect, a resend) of one request shares it. Each `perform`
    /// starts without one: a session that outlives a request must not find a later restart past a
    /// deadline an earlier one set.
    package var reachDeadline: UInt64?
    /// What to suggest when no daemon runs and none may be started.
    package var noDaemonHint: String

    package init(paths: IceboxPaths, autostart: DaemonAutostart?, readsLineEvents: Bool, noDaemonHint: String) {
        self.paths = paths
        self.autostart = autostart
        self.readsLineEvents = readsLineEvents
        self.noDaemonHint = noDaemonHint
    }

    /// Connects to the daemon, starting one if none runs and the session may. Before anything
    /// is sent, the socket must be a socket (not a link) and the daemon this user's (or root's,
    /// for root); with no daemon, the directories must be this user's (`IceboxPaths.verify`).
    /// When no daemon answers the first try, `reachDaemon` starts one and rides over a restart.
    package mutating func connect() throws(IceboxError) -> DaemonConnection {
        var lastError: SystemError?
        if let connection = try attemptConnect(&lastError) { return connection }
        try paths.verify()
        guard let autostart else {
            throw IceboxError(.daemonUnavailable, "no icebox daemon is running for \(paths.runtimeDir)", hint: noDaemonHint)
        }
        return try reachDaemon(autostart)
    }

    /// For `icebox daemon`: starts `icebox daemon --foreground` and waits (up to 10 s) until it
    /// says it listens, on a pipe it inherits as descriptor 3 (no polling of the socket).
    package mutating func startDaemon() throws(IceboxError) {
        try paths.prepare()
        let starting = try spawnDaemon(autostart ?? DaemonAutostart())
        defer { close(starting.readyFD) }
        startedDaemon = starting.process
        // A failed wait is a daemon that said nothing in time: didNotStart below says so.
        let ready = (try? Poll.wait(starting.readyFD, events: Int16(POLLIN), timeoutNanos: 10_000_000_000)) ?? 0
        let word = ready != 0 ? Self.readWord(starting.readyFD) : nil
        // "busy" with the socket in place: another command started a daemon at the same
        // moment, and that one serves; connect() goes on to it.
        if word?.hasPrefix("busy") == true && !FileIO.exists(paths.controlSocket) {
            // Only words the message: an unreadable lock file leaves the holder unnamed.
            let holder = ((try? FileIO.read(paths.lockFile)) ?? "").trimmed()
            throw IceboxError(
                .unavailable,
                "an icebox daemon (pid \(holder.isEmpty ? "unknown" : holder)) holds \(paths.lockFile) but its control socket \(paths.controlSocket) is gone",
                hint: "stop that daemon (kill -TERM \(holder.isEmpty ? "PID" : holder)) and try again")
        }
        if word == nil { throw didNotStart() }
    }

    /// The daemon this session started ended before it said it listens.
    func didNotStart() -> IceboxError {
        // Only words the message: with no log to quote, it still says the daemon did not start.
        let tail = ((try? FileIO.read(paths.daemonLog)) ?? "").split(separator: "\n").suffix(3).joined(separator: "; ")
        return IceboxError(
            .unavailable, "the icebox daemon did not start" + (tail.isEmpty ? "" : ": \(tail)"),
            hint: "see \(paths.daemonLog), or run 'icebox daemon --foreground' to watch it")
    }

    /// A daemon this session started, until it says whether it serves.
    struct StartingDaemon {
        let process: ProcessHandle
        /// The read end of the pipe it says "ready" or "busy" on (its descriptor 3).
        let readyFD: Int32
    }

    /// Spawns `icebox daemon --foreground`, its output to the daemon log, with the write end
    /// of a pipe as descriptor 3 for its word. The directories are prepared already.
    func spawnDaemon(_ autostart: DaemonAutostart) throws(IceboxError) -> StartingDaemon {
        var pipeFDs: [Int32] = [-1, -1]
        do { let pipe = try PipePair(); pipeFDs = [pipe.readEnd, pipe.writeEnd] } catch { throw IceboxError("start the daemon", error) }
        let logFD = open(paths.daemonLog, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0o600)
        defer { if logFD >= 0 { close(logFD) } }
        var env = ProcessEnvironment.current.filter { !$0.hasPrefix("ICEBOX_READY_FD=") }
        env += ["ICEBOX_READY_FD=3", "ICEBOX_RUNTIME_DIR=\(paths.runtimeDir)", "ICEBOX_STATE_DIR=\(paths.stateDir)"]
        var args = ["icebox", "daemon", "--foreground"]
        if let cgroupRoot = autostart.cgroupRoot { args += ["--cgroup-root", cgroupRoot] }
        // /proc/self/exe, looked up only when a daemon is started, not on every command.
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

    /// Sends a request and hands each reply to `handle` until the final one; returns its exit
    /// code, and its typed reason in `reason`. With `cancellation` (an `async` call's), each
    /// connection is attached to it before the request goes and detached before it is closed,
    /// so a cancel never shuts down a descriptor number reused since. See `mayResend`.
    package mutating func perform(
        _ request: ControlRequest, until deadline: UInt64, reason: inout IceboxError.Reason.Wire?,
        rawApps: ((String) -> Void)? = nil, cancellation: CallCancellation? = nil, _ handle: (ControlReply) -> Void
    ) throws(IceboxError) -> Int32 {
        let line = DaemonConnection.Line(request)  // before the connect: see Line
        reachDeadline = nil
        var connection = try connect()
        while true {
            connection.rawApps = rawApps
            do {
                defer { withExtendedLifetime(connection) { cancellation?.detach() } }
                try cancellation?.attach(connection.fd, what: request.commandName)
                try connection.send(line)
                return try replies(to: request, on: connection, until: deadline, reason: &reason, handle)
            } catch  where mayResend(request, after: connection) && cancellation?.isCancelled != true {
                // Once more, to the next daemon (started if need be): see mayResend.
                connection = try connect()
            }
        }
    }

    /// Whether `request`, whose connection ended before its final reply, goes once more to the next
    /// daemon: when no daemon read it (DaemonConnection.resetUnanswered: one on its way out, or
    /// killed, closed its listener between our connect and its accept), and, for a request that
    /// changes nothing (ControlRequest.isReadOnly), whenever the daemon went away before a byte of
    /// answer (DaemonConnection.endedBeforeAnyReply). A request that changes something and was read
    /// may have been carried out: it is not sent again (a second suspend could undo a resume made
    /// since), and fails saying so. Every resend is within the reach deadline
    /// (ClientSession+Reach), set here if no connect set it.
    package mutating func mayResend(_ request: ControlRequest, after connection: DaemonConnection) -> Bool {
        guard connection.resetUnanswered || request.isReadOnly && connection.endedBeforeAnyReply else { return false }
        let now = Clock.monotonicNanos()
        let deadline = reachDeadline ?? now.saturatingAdd(Self.reachBudgetNanos)
        reachDeadline = deadline
        return now < deadline
    }

    private func replies(
        to request: ControlRequest, on connection: DaemonConnection, until deadline: UInt64,
        reason: inout IceboxError.Reason.Wire?, _ handle: (ControlReply) -> Void
    ) throws(IceboxError) -> Int32 {
        do {
            return try connection.replies(until: deadline, what: request.commandName, reason: &reason, handle)
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

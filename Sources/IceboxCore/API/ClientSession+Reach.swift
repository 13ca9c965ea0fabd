import Glibc
import IceboxSystem

/// The slow path of `ClientSession.connect`: its first try found no daemon listening. A command can
/// arrive while a daemon restarts (after a crash, or one exiting idle as the next is needed) and
/// find:
///
/// - no socket: no daemon ran, or one exited and removed it, or the next one is between removing a
///   dead one's socket and binding its own;
/// - a socket file, but ECONNREFUSED: its daemon was killed and left it, and no successor has bound
///   yet (or one has bound and not yet listened);
/// - the lock held and no one listening: a daemon on its way out (its socket removed), or the next
///   one starting (it takes the lock before it listens, and adopts after);
/// - the daemon it started answering "busy": another command's daemon took the lock first and
///   serves, or is about to;
/// - the daemon that said "ready" killed before the connect.
///
/// Each is a moment of a restart, not a failure: the command connects again whenever something may
/// have changed, until `reachBudgetNanos` after it first found no daemon, and only then fails (69),
/// saying what it tried. The waits are on events: the runtime directory (inotify: a socket
/// created), the pipe and pidfd of a daemon this command started, the pidfd of the lock's holder. A
/// backoff (1 ms, doubling to 100 ms) covers what has none: a socket bound but not listening, a
/// holder out of sight. A command starts a daemon only while none of its own is starting or
/// exiting, and not while the holder is a daemon starting (a socket file is in place): hundreds of
/// commands waiting out one restart start about one each, not one per wake-up.
///
/// A request lost with a connection is `ClientSession.mayResend`'s matter.
extension ClientSession {
    /// How long a command tries to reach a daemon once it found none: one starting under load
    /// listens well within a second; ten leave room for a loaded machine and a restart or two.
    package static let reachBudgetNanos: UInt64 = 10_000_000_000

    /// What the tries came to, for the message if they all fail.
    struct ReachTries {
        var connects = 0
        var lastError: SystemError?
        var started = 0
        /// What the last daemon this command started did: "said ready", "said busy", ….
        var lastStart: String?
        /// The holder of the lock at the last look: its pid (0: a process out of sight).
        var holder: pid_t?
    }

    /// Connects to the daemon, starting one and riding over a restart, within the reach deadline.
    mutating func reachDaemon(_ autostart: DaemonAutostart) throws(IceboxError) -> DaemonConnection {
        let began = Clock.monotonicNanos()
        let deadline = reachDeadline ?? began.saturatingAdd(Self.reachBudgetNanos)
        reachDeadline = deadline
        try paths.prepare()
        // Without inotify (out of instances, say), or with a watch refused, the backoff alone
        // paces the tries: slower, never wrong.
        var watcher = try? Inotify()
        // Refused: as without inotify (above).
        if let w = watcher, (try? w.addWatch(paths.runtimeDir, mask: UInt32(IN_CREATE | IN_MOVED_TO))) == nil { watcher = nil }
        var tries = ReachTries()
        var ours: StartingDaemon?
        // Ours once it closed its pipe without "ready": its exit tells a failed start (a
        // status) from a daemon killed in a restart (a signal).
        var oursExiting: ProcessHandle?
        var said: String?
        var holder: ProcessHandle?
        // Holders seen to end: one still listed (another process shares its lock's open file)
        // is not watched again: its pidfd would wake every wait at once.
        var endedHolders: Set<pid_t> = []
        var backoff: UInt64 = 1_000_000
        // Not before then is another daemon started, once one of ours did not serve: the gap
        // (25 ms, doubling to a second) keeps a command whose look at the lock finds no
        // holder where there is one (see lockHolder) from starting daemon after daemon.
        var nextStart: UInt64 = 0
        var startGap: UInt64 = 25_000_000
        defer { if let ours { close(ours.readyFD) } }
        while true {
            tries.connects += 1
            if let connection = try attemptConnect(&tries.lastError) { return connection }
            let now = Clock.monotonicNanos()
            if now >= deadline { throw unreachable(tries, since: began) }
            let holderPID = Self.lockHolder(paths.lockFile)
            tries.holder = holderPID
            // A holder with a socket file in place (refused) is the next daemon starting, and
            // is waited for. Without one, the holder is on its way out (or between removing
            // and binding): a daemon of ours waits for its lock (Daemon.takeLock) and serves.
            let socketLeft = tries.lastError?.errno == ECONNREFUSED
            if holderPID == nil || !socketLeft, ours == nil, oursExiting == nil, now >= nextStart {
                let starting = try spawnDaemon(autostart)
                ours = starting
                startedDaemon = starting.process
                said = nil
                tries.started += 1
                tries.lastStart = "had not said whether it serves"
            }
            if let pid = holderPID, pid > 0, pid != ours?.process.pid, !endedHolders.contains(pid) {
                // The holder gone before we hold its pidfd: the next round finds the lock free
                // or held by another.
                if holder?.pid != pid { holder = try? ProcessHandle(adopting: pid) }
            } else {
                holder = nil
            }
            var pfds: [pollfd] = []
            func watch(_ fd: Int32?) -> Int? {
                guard let fd else { return nil }
                pfds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0))
                return pfds.count - 1
            }
            let watcherAt = watch(watcher?.fd), oursAt = watch(ours?.readyFD ?? oursExiting?.pidfd), holderAt = watch(holder?.pidfd)
            let ready: Int
            do { ready = try Poll.wait(&pfds, until: min(now.saturatingAdd(backoff), deadline)) } catch {
                throw IceboxError("wait for the icebox daemon", error)
            }
            if ready == 0 {
                backoff = min(backoff * 2, 100_000_000)
                continue
            }
            if let at = watcherAt, pfds[at].revents != 0 {
                // Only drains the queue: the wake-up counted, and the connect looks at the socket.
                _ = try? watcher?.read()
                backoff = 1_000_000  // a socket appeared: it listens within microseconds
            }
            if let at = oursAt, pfds[at].revents != 0 {
                if let starting = ours {
                    said = Self.readWord(starting.readyFD)
                    close(starting.readyFD)
                    ours = nil
                    tries.lastStart = said.map { "said \($0)" } ?? "ended before it said whether it serves"
                    // One that serves needs no more watching; one that will not (busy), or said
                    // nothing, is waited for.
                    if said != "ready" {
                        oursExiting = starting.process
                        nextStart = Clock.monotonicNanos().saturatingAdd(startGap)
                        startGap = min(startGap * 2, 1_000_000_000)
                    }
                } else if let exiting = oursExiting {
                    // Its pidfd says it ended: no longer watched, even if not reaped here (its
                    // readable pidfd would end every wait at once).
                    oursExiting = nil
                    if startedDaemon === exiting { startedDaemon = nil }
                    let end: Termination?
                    do { end = try exiting.reapIfExited() } catch { end = nil }
                    // Exited with a status before a word: it could not start (its log says why),
                    // and another would fare no better.
                    if said == nil, case .exited? = end { throw didNotStart() }
                    if said == nil, let end { tries.lastStart = "was \(end) before it said whether it serves" }
                }
            }
            if let at = holderAt, let pid = holder?.pid, pfds[at].revents != 0 {
                endedHolders.insert(pid)
                holder = nil
            }
        }
    }

    /// One connect: the connection to a trusted daemon, or nil when no one listens (ENOENT,
    /// ECONNREFUSED, kept in `lastError`); anything else is thrown.
    func attemptConnect(_ lastError: inout SystemError?) throws(IceboxError) -> DaemonConnection? {
        try DaemonConnection.checkSocketPath(paths.controlSocket)
        let connection: DaemonConnection
        do { connection = try DaemonConnection(socket: paths.controlSocket) } catch {
            guard error.errno == ENOENT || error.errno == ECONNREFUSED else {
                // A connect that failed otherwise than for want of a daemon (permission, a path too long).
                throw IceboxError(
                    error.isPermissionDenied ? .permissionDenied : .daemonUnavailable, "cannot reach the icebox daemon: \(error)",
                    hint: "set ICEBOX_RUNTIME_DIR to a directory of your own")
            }
            lastError = error
            return nil
        }
        try connection.requireTrustedDaemon(socket: paths.controlSocket)
        connection.readsLineEvents = readsLineEvents
        return connection
    }

    /// The word a starting daemon wrote on its pipe ("ready", "busy"), nil if it closed the pipe
    /// without one.
    static func readWord(_ fd: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: 16)
        let n = retryingOnInterrupt { read(fd, &buffer, 16) }
        guard n > 0 else { return nil }
        let word = String(decoding: buffer[0..<n], as: UTF8.self).trimmed()
        return word.isEmpty ? nil : word
    }

    /// The process holding the daemon lock (flock on `path`), from /proc/locks (the kernel's word;
    /// the pid in the file is the last holder's, dead or alive); nil when none does (or the file or
    /// /proc/locks cannot be read); 0 for a process outside this pid namespace. Where /proc/locks
    /// names another device and inode than stat(2) (overlayfs names its upper layer's), no holder
    /// is found: daemons started in vain, spaced by `nextStart`, say "busy": more processes, the
    /// same outcome.
    package static func lockHolder(_ path: String) -> pid_t? {
        var status = stat()
        // The lock table unreadable (no /proc/locks): no holder known, so the caller starts a
        // daemon, whose own lock then says busy if one holds it.
        guard stat(path, &status) == 0, let locks = try? FileLocks.read() else { return nil }
        let dev = UInt64(status.st_dev)
        // glibc's major() and minor(), as /proc/locks prints them ("%02x:%02x").
        let major = (dev >> 8) & 0xfff | (dev >> 32) & ~0xfff
        let minor = dev & 0xff | (dev >> 12) & ~0xff
        func hex(_ n: UInt64) -> String {
            let text = String(n, radix: 16)
            return text.count < 2 ? "0" + text : text
        }
        let device = hex(major) + ":" + hex(minor)
        return locks.first {
            $0.kind == .flock && !$0.isWaiter && $0.inode == UInt64(status.st_ino) && $0.device == device
        }?.pid
    }

    /// The failure once the reach deadline has passed: what was tried, for how long, and what
    /// stands in the way.
    func unreachable(_ tries: ReachTries, since began: UInt64) -> IceboxError {
        let waited = DurationText.format(Clock.monotonicNanos().saturatingSub(began))
        var what = "no icebox daemon could be reached at its control socket \(paths.controlSocket) within \(waited)"
        what += ": \(tries.connects) connects (the last: \(tries.lastError.map { "\($0)" } ?? "none"))"
        what += ", \(tries.started) daemon\(tries.started == 1 ? "" : "s") started"
        if let last = tries.lastStart { what += " (the last \(last))" }
        if let holder = tries.holder {
            let who = holder > 0 ? "pid \(holder)" : "a process in another pid namespace"
            what += "; \(who) holds \(paths.lockFile) and does not listen"
            if holder > 0 {
                return IceboxError(
                    .daemonUnavailable, what,
                    hint: "if that daemon is stuck, stop it (kill -TERM \(holder)) and try again; see \(paths.daemonLog)")
            }
        }
        return IceboxError(.daemonUnavailable, what, hint: "see \(paths.daemonLog), or run 'icebox daemon --foreground' to watch it")
    }
}

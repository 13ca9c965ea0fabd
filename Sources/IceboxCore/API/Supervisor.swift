import Glibc
import IceboxSystem
import Synchronization

/// An icebox supervisor inside this process: the daemon's engine on a thread of its own, with its
/// own runtime directory, state directory and cgroup root, driven through the same typed calls as
/// ``IceboxClient``. For integration tests: no icebox executable, no daemon process, nothing shared
/// with another supervisor.
///
/// ```swift
/// let supervisor = try Supervisor.start()
/// defer { try? supervisor.stop() }
/// let app = try supervisor.launch(LaunchOptions(name: "nap", command: ["sleep", "100"]))
/// try supervisor.suspend("nap")      // returns once the kernel confirms the freeze
/// try supervisor.resume("nap")
/// try supervisor.evict("nap")
/// try supervisor.stop()              // throws if anything was left behind
/// ```
///
/// The engine does not take over the process: it leaves SIGTERM, SIGINT and SIGHUP alone, does not
/// become the child subreaper, and never exits on its own for want of apps. The apps it launches
/// are children of this process.
///
/// If this process dies without ``stop(timeout:)`` (a test runner's SIGKILL, a crash, Ctrl-C),
/// nothing is left behind: a small `/bin/sh` sweeper, in a session of its own, sees the end of a
/// pipe only this process writes to, then kills the apps (frozen ones too) and removes the cgroups
/// it made, in every hierarchy, and its directories, within about a second. It finds apps by their
/// cgroups: an app frozen with SIGSTOP on a host with no cgroups is not found.
public final class Supervisor: Sendable {
    /// A client for this supervisor's engine; the methods below forward to it.
    public let client: IceboxClient
    /// What the host offers, as discovered for this supervisor's cgroup root.
    package let hostFacts: HostFacts
    /// The v2 directory the apps' cgroups are made under (`<cgroup root>/<app name>`, as in
    /// ``AppRecord/cgroup``), or nil if the host has no usable cgroup v2 root: then apps are
    /// frozen with the v1 freezer or SIGSTOP, and ``cgroupProblem`` says why.
    public var cgroupRoot: String? { hostFacts.cgroup2Usable ? hostFacts.cgroupRoot : nil }
    /// Why no cgroup v2 root is usable (for a test to print when it skips), or nil.
    public var cgroupProblem: String? { hostFacts.cgroup2Usable ? nil : hostFacts.cgroupRootProblem ?? "no cgroup2 root" }
    /// The runtime directory (control socket, notify sockets) and state directory (event
    /// log, registry, app logs) of this supervisor.
    public var paths: IceboxPaths { client.paths }

    private let engine: JoinableThread
    private let outcome: EngineOutcome
    private let cleanup: TestCleanup
    private let stopped = Atomic(false)

    private init(client: IceboxClient, hostFacts: HostFacts, engine: JoinableThread, outcome: EngineOutcome, cleanup: TestCleanup) {
        self.client = client
        self.hostFacts = hostFacts
        self.engine = engine
        self.outcome = outcome
        self.cleanup = cleanup
    }

    /// Starts an engine and returns once it listens on its control socket. The eviction policy
    /// is the one saved in the state directory, if any. Corresponds to `icebox daemon
    /// --foreground --cgroup-root PATH` with `ICEBOX_RUNTIME_DIR` and `ICEBOX_STATE_DIR` set.
    ///
    /// - Parameters:
    ///   - runtimeDirectory: where the control and notify sockets go; nil: a new private
    ///     directory under `$TMPDIR` (or /tmp), removed by ``stop(timeout:)``.
    ///   - stateDirectory: where the event log, the registry and the apps' logs go; nil: a
    ///     new private directory, removed by ``stop(timeout:)``.
    ///   - cgroupRoot: the cgroup v2 directory for the apps' cgroups; nil: a new one,
    ///     `icebox-supervisor-PID-N`, directly under the host's cgroup2 mount, removed by
    ///     ``stop(timeout:)``.
    ///   - readyTimeout: how long to wait for the engine to listen.
    /// - Throws: ``IceboxError`` if a directory cannot be made or the engine cannot start;
    ///   whatever was made is removed again.
    public static func start(
        runtimeDirectory: String? = nil, stateDirectory: String? = nil, cgroupRoot: String? = nil,
        readyTimeout: Duration = .seconds(10)
    ) throws(IceboxError) -> Supervisor {
        var owned: [String] = []
        var ownedRoots: [String] = []
        var startedEngine: JoinableThread?
        var sweeper: SupervisorSweeper?
        do throws(IceboxError) {
            var base: String?
            if runtimeDirectory == nil || stateDirectory == nil {
                // Short: notify sockets inside must fit sun_path (107 bytes).
                do { base = try FileIO.makeTemporaryDirectory(prefix: "icebox-supervisor-") } catch {
                    throw IceboxError("start a supervisor", error)
                }
                owned.append(base!)
            }
            let paths = IceboxPaths(runtimeDir: runtimeDirectory ?? base! + "/run", stateDir: stateDirectory ?? base! + "/state")
            for dir in [runtimeDirectory, stateDirectory].compactMap({ $0 }) where !FileIO.exists(dir) { owned.append(dir) }
            try paths.prepare()

            let facts = TestCgroups.discover(cgroupRoot, prefix: "icebox-supervisor", owned: &ownedRoots)

            // Before anything is launched: whatever kills this process from here on, the
            // sweeper removes what the engine made (see SupervisorSweeper).
            sweeper = try SupervisorSweeper.start(TestCgroups.sweep(facts, ownedRoots: ownedRoots, directories: owned))

            var config = Daemon.Configuration(paths: paths, cgroupRootOverride: TestCgroups.engineRoot(cgroupRoot, facts))
            config.cgroupRootIsExplicit = cgroupRoot != nil  // a root made up here may fall back
            config.ownsProcess = false
            config.idleExitNanos = nil
            let ready: PipePair
            do { ready = try PipePair() } catch { throw IceboxError("start a supervisor", error) }
            defer { close(ready.readEnd) }
            config.readyFD = ready.writeEnd
            let readyIdentity = FileIdentity(fd: ready.writeEnd)
            let outcome = EngineOutcome()
            let engine: JoinableThread
            do throws(SystemError) {
                engine = try JoinableThread { [config] in
                    do throws(IceboxError) {
                        let daemon = try Daemon(config: config)
                        outcome.set(.success(try daemon.run()))
                    } catch {
                        outcome.set(.failure(error))
                        // The engine closes the ready descriptor once it listens; it failed before,
                        // so it is still ours to close (checked: a number reused since is never
                        // closed by mistake).
                        if let readyIdentity, FileIdentity(fd: ready.writeEnd) == readyIdentity { close(ready.writeEnd) }
                    }
                }
            } catch {
                close(ready.writeEnd)
                throw IceboxError("start the supervisor's engine", error)
            }
            startedEngine = engine
            try waitUntilReady(ready.readEnd, engine: engine, outcome: outcome, paths: paths, deadline: deadline(after: readyTimeout))
            return Supervisor(
                client: IceboxClient(paths: paths), hostFacts: facts, engine: engine, outcome: outcome,
                cleanup: TestCleanup(directories: owned, cgroupRoots: ownedRoots, sweeper: sweeper))
        } catch {
            // Nothing made is left behind, unless the engine still runs (and uses it).
            if startedEngine?.join(until: deadline(after: .seconds(5))) ?? true {
                // The start's own error, thrown below, is what the caller must see.
                _ = TestCleanup(directories: owned, cgroupRoots: ownedRoots, sweeper: sweeper).remove()
            }
            throw error
        }
    }

    /// Waits for "ready" on the engine's ready pipe, for the engine to end, or the deadline.
    private static func waitUntilReady(
        _ fd: Int32, engine: JoinableThread, outcome: EngineOutcome, paths: IceboxPaths, deadline: UInt64
    ) throws(IceboxError) {
        var pfds = [
            pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: engine.finishedDescriptor, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            let ready: Int
            do { ready = try Poll.wait(&pfds, until: deadline) } catch {
                throw IceboxError(.failure, "wait for the supervisor's engine: \(error)")
            }
            if ready == 0 {
                throw IceboxError(
                    .unavailable, "the supervisor's engine did not start listening on \(paths.controlSocket) in time",
                    hint: "its directories stay in place while it runs: \(paths.runtimeDir), \(paths.stateDir)")
            }
            if pfds[0].revents != 0 {
                // The engine writes its word (Daemon.signalReady) as to a client that started it.
                switch ClientSession.readWord(fd) {
                case "ready"?: return
                case "busy"?:
                    engine.join(until: deadline)
                    throw IceboxError(
                        .unavailable, "another icebox daemon already serves \(paths.runtimeDir)",
                        hint: "give the supervisor a runtime directory of its own")
                default: pfds[0].events = 0  // end of file: only the engine's end is left to wait for
                }
            }
            if pfds[1].revents != 0 {
                engine.join(until: deadline)
                if case .failure(let error) = outcome.value { throw error }
                throw IceboxError(.failure, "the supervisor's engine stopped before it listened")
            }
        }
    }

    /// Stops the engine: every app is terminated the graceful way (SIGTERM, SIGKILL after
    /// `timeout`) and reaped, the engine's thread is joined, and the directories and cgroup
    /// roots this supervisor created are removed. Calling it again does nothing. Corresponds
    /// to `icebox daemon --stop --terminate-apps`, plus the removal of the directories.
    ///
    /// - Throws: ``IceboxError`` if something was left behind: a process or cgroup the
    ///   engine did not remove (removed now, as well as can be), a directory that cannot be
    ///   removed, or an engine that did not end. The message lists each.
    public func stop(timeout: Duration = .seconds(10)) throws(IceboxError) {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var problems: [String] = []
        if !engine.hasFinished {
            do { try client.send(.stop(terminateApps: true, timeoutNanos: timeout.saturatingNanoseconds)) } catch {
                problems.append("the stop request failed: \(error)")
            }
        }
        guard engine.join(until: Self.deadline(after: .seconds(10))) else {
            problems.append("the engine's thread did not end; \(paths.runtimeDir), \(paths.stateDir) and the cgroups are left as they are")
            throw IceboxError(.failure, "stop the supervisor: " + problems.joined(separator: "; "))
        }
        if case .failure(let error) = outcome.value { problems.append("the engine failed: \(error)") }
        problems += cleanup.remove()
        if !problems.isEmpty { throw IceboxError(.failure, "stop the supervisor: " + problems.joined(separator: "; ")) }
    }

    deinit {
        // A supervisor dropped without stop() must not leave apps and cgroups behind.
        do { try stop() } catch {
            _ = "icebox: Supervisor dropped without stop(): \(error)\n".withCString { write(2, $0, strlen($0)) }
        }
    }

    // MARK: The lifecycle, as on IceboxClient

    /// Launches an app; see ``IceboxClient/launch(_:)-7an0t``. Corresponds to `icebox launch`.
    public func launch(_ options: LaunchOptions) throws(IceboxError) -> LaunchedApp { try client.launch(options) }

    /// Takes over running processes as an app; see ``IceboxClient/adopt(_:)-62exe``. It is not
    /// this process's child unless it was; ``stop(timeout:)`` terminates it with the rest.
    public func adopt(_ options: AdoptOptions) throws(IceboxError) -> AdoptedApp { try client.adopt(options) }

    /// Hands an app back, still running; see ``IceboxClient/release(_:)-49msn``.
    @discardableResult
    public func release(_ name: String) throws(IceboxError) -> ReleasedApp { try client.release(name) }

    /// Suspends an app; see ``IceboxClient/suspend(_:grace:)-4fsnk``. Corresponds to `icebox suspend`.
    @discardableResult
    public func suspend(_ name: String, grace: Duration? = nil) throws(IceboxError) -> SuspendResult {
        try client.suspend(name, grace: grace)
    }

    /// Resumes an app; see ``IceboxClient/resume(_:waitReady:)-8uzw0``. Corresponds to `icebox resume`.
    @discardableResult
    public func resume(_ name: String, waitReady: Bool = false) throws(IceboxError) -> ResumeResult {
        try client.resume(name, waitReady: waitReady)
    }

    /// Terminates an app; see ``IceboxClient/terminate(_:timeout:)-91jpu``. Corresponds to `icebox terminate`.
    @discardableResult
    public func terminate(_ name: String, timeout: Duration = .seconds(10)) throws(IceboxError) -> EndResult {
        try client.terminate(name, timeout: timeout)
    }

    /// Evicts an app, or checkpoints it to disk with `toDisk`; see
    /// ``IceboxClient/evict(_:toDisk:)-2anup``.
    @discardableResult
    public func evict(_ name: String, toDisk: Bool = false) throws(IceboxError) -> EndResult {
        try client.evict(name, toDisk: toDisk)
    }

    /// Relaunches an ended app; see ``IceboxClient/relaunch(_:)-8bdfj``. Corresponds to `icebox relaunch`.
    public func relaunch(_ name: String) throws(IceboxError) -> LaunchedApp { try client.relaunch(name) }

    /// An app's state; see ``IceboxClient/state(of:)-i4f5``. Corresponds to `icebox ps --all`.
    public func state(of name: String) throws(IceboxError) -> AppState? { try client.state(of: name) }

    /// The apps; see ``IceboxClient/apps(all:)-5ebi5``. Corresponds to `icebox ps --json`.
    public func apps(all: Bool = false) throws(IceboxError) -> [AppRecord] { try client.apps(all: all) }

    /// The events as they happen, until the supervisor stops; see
    /// ``IceboxClient/events(for:replay:)``.
    public func events(for name: String? = nil, replay: Bool = false) throws(IceboxError) -> AsyncStream<Event> {
        try client.events(for: name, replay: replay)
    }

    /// Checks that the engine answers; see ``IceboxClient/ping()-4yhqk``.
    @discardableResult
    public func ping() throws(IceboxError) -> CommandOutput { try client.ping() }

    // MARK: Cleaning up

    static func deadline(after duration: Duration) -> UInt64 { Clock.monotonicNanos().saturatingAdd(duration.saturatingNanoseconds) }

    /// Removes cgroup roots, deepest first. Anything still inside was left behind by the
    /// engine: it is killed, reaped if it is this process's child, and reported.
    static func removeCgroupRoots(_ roots: [String]) -> [String] {
        var problems: [String] = []
        for root in roots where FileIO.isDirectory(root) {
            // A root that cannot be listed: its rmdir below fails and says so.
            for child in ((try? FileIO.list(root)) ?? []).sorted() where FileIO.isDirectory(root + "/" + child) {
                let path = root + "/" + child
                let pids = Cgroup2(path: path).procs()
                problems.append(
                    "the engine left cgroup \(path) behind"
                        + (pids.isEmpty ? "" : " with processes \(pids.map(String.init).joined(separator: " ")) (killed)"))
                killAndWait(cgroup: path, pids: pids)
                if rmdir(path) < 0 && errno != ENOENT { problems.append(SystemError("remove cgroup", path: path).description) }
            }
            if rmdir(root) < 0 && errno != ENOENT { problems.append(SystemError("remove cgroup root", path: root).description) }
        }
        return problems
    }

    /// Kills a cgroup's processes and waits (5 s at most) for them to be gone: through
    /// `cgroup.events` in v2, through each one's pidfd in v1 (which has no such event).
    static func killAndWait(cgroup path: String, pids: [pid_t]) {
        let deadline = Clock.monotonicNanos() &+ 5_000_000_000
        // A process gone before we hold its pidfd needs no killing.
        let handles = pids.compactMap { try? ProcessHandle(adopting: $0) }
        let v2 = Cgroup2(path: path)
        if FileIO.exists(path + "/cgroup.events") {
            // The SIGKILLs below kill what cgroup.kill did not; the caller's rmdir reports a
            // cgroup that stays.
            if v2.supportsKill { try? v2.kill() }
        } else {
            // A frozen v1 task acts on the SIGKILL only once thawed; the caller's rmdir reports
            // a cgroup that stays busy.
            try? FileIO.write(path + "/freezer.state", "THAWED")
        }
        // ESRCH only: the process exited meanwhile.
        for handle in handles { _ = try? handle.send(SIGKILL) }
        if FileIO.exists(path + "/cgroup.events") {
            // Both waits are bounded by the deadline; what still runs after it makes the
            // caller's rmdir fail, which is reported.
            _ = try? v2.waitForEvents(until: deadline) { !$0.populated }
        }
        for handle in handles {
            _ = try? Poll.wait(handle.pidfd, events: Int16(POLLIN), until: deadline)  // bounded likewise
            // The engine's apps are our children: no zombie stays. One that is not (an adopted
            // one) is reaped by its own parent.
            _ = try? handle.reapIfExited()
        }
    }
}

/// How the engine's `run()` ended: true if it served until stopped, false if another daemon
/// already served the runtime directory, or the error it threw.
private final class EngineOutcome: Sendable {
    private let result = Mutex<Result<Bool, IceboxError>?>(nil)

    func set(_ value: Result<Bool, IceboxError>) { result.withLock { $0 = value } }
    var value: Result<Bool, IceboxError>? { result.withLock { $0 } }
}

/// A descriptor's device and inode: tells whether a descriptor number still refers to the
/// file it referred to before (a pipe's inode is unique while either end is open).
private struct FileIdentity: Equatable {
    var device: UInt64
    var inode: UInt64

    init?(fd: Int32) {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
    }
}

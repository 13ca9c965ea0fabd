import Glibc
import IceboxSystem

/// A client for a running icebox daemon: the lifecycle as typed Swift calls, where the CLI has
/// commands.
///
/// Each call connects to the daemon's control socket (``IceboxPaths/controlSocket``), sends one
/// request line and reads the reply lines until it is done (`docs/protocol.md` in the icebox
/// repository). Every wait has a deadline (``timeout`` plus the time-outs the request carries), so
/// a hung daemon fails the call rather than blocking it. A failed request throws an ``IceboxError``
/// with the daemon's message, exit code and typed reason. The client never starts a daemon: a
/// ``Supervisor`` (the engine in this process) or an ``IceboxDaemon`` (an `icebox daemon` process
/// for a test) does, and its `client` is one; see <doc:TestingAgainstADaemon>.
///
/// ```swift
/// let daemon = try IceboxDaemon.start()   // its own directories and cgroup root
/// defer { try? daemon.stop() }
/// let client = IceboxClient(paths: daemon.paths)   // the same as daemon.client
/// let app = try client.launch(LaunchOptions(name: "web", command: ["python3", "server.py"]))
/// try client.suspend("web")
/// ```
///
/// Another daemon is reached through its directories (`ICEBOX_RUNTIME_DIR`, `ICEBOX_STATE_DIR`),
/// the user's own through `IceboxPaths.fromEnvironment(ProcessInfo.processInfo.environment)`.
///
/// Each call has two forms of the same name. The synchronous one blocks the calling thread
/// (milliseconds, or up to an app's grace for a suspend); the `async` one, which Swift picks in an
/// `async` context, runs the exchange on a thread of its own (none of the cooperative pool's), and
/// a cancelled task ends its wait (the request may or may not have been done).
/// ``events(for:replay:)`` streams the event log. The lifecycle calls return what they did, from
/// the daemon's data: ``SuspendResult``, ``ResumeResult``, ``EndResult``, ``LaunchedApp``.
public struct IceboxClient: Sendable {
    /// The daemon's runtime directory (its control socket) and state directory (its event log and
    /// registry).
    public let paths: IceboxPaths
    /// How long any one call may take beyond the time-outs its request carries (a launch's
    /// readiness time-out, a terminate's SIGKILL time-out). The default, 60 s, covers a
    /// suspend that waits out the default maximum grace (30 s) and a slow freeze.
    public var timeout: Duration = .seconds(60)
    /// Set on the copy an `async` form runs its exchanges with: its task's cancellation shuts
    /// their connections down.
    var cancellation: CallCancellation?
    /// How the CLI's client starts a daemon when none runs; nil for every library client, whose
    /// call then fails with ``IceboxError/Reason/daemonUnavailable``.
    package var autostart: DaemonAutostart?
    /// Whether a `line` reply's event is decoded (DaemonConnection.readsLineEvents).
    package var readsLineEvents = true

    /// A client for the daemon that uses `paths`.
    public init(paths: IceboxPaths) { self.paths = paths }

    /// A client for the daemon whose control socket is in `runtimeDirectory` and event log in
    /// `stateDirectory` (`icebox daemon`'s `ICEBOX_RUNTIME_DIR` and `ICEBOX_STATE_DIR`).
    public init(runtimeDirectory: String, stateDirectory: String) {
        self.init(paths: IceboxPaths(runtimeDir: runtimeDirectory, stateDir: stateDirectory))
    }

    // MARK: Requests

    /// Sends one request (any, the policy ones included) and collects what the daemon says
    /// until it is done; throws the daemon's error if the request failed.
    @discardableResult
    package func send(_ request: ControlRequest) throws(IceboxError) -> CommandOutput { try exchange(request).output }

    /// Checks that the daemon answers. Corresponds to a `ping` request.
    @discardableResult
    public func ping() throws(IceboxError) -> CommandOutput { try send(.ping) }

    /// Launches an app, detached (its output goes to `$STATE_DIR/logs/NAME.log`), and
    /// returns once it counts as ready (``LaunchOptions/ready``: at once for `exec`).
    ///
    /// As with `icebox launch`, an empty ``LaunchOptions/environment`` means this process's
    /// (so `PATH` finds `sleep` or `python3`), and a nil ``LaunchOptions/workingDirectory`` this
    /// process's. A command that cannot be found throws with exit code 127
    /// (``ExitCode/notFound``). Corresponds to `icebox launch NAME -- CMD...`.
    public func launch(_ options: LaunchOptions) throws(IceboxError) -> LaunchedApp {
        var options = options
        options.attached = false
        if options.environment.isEmpty {
            options.environment = ProcessEnvironment.current.filter { !$0.hasPrefix("ICEBOX_READY_FD=") }
        }
        if options.workingDirectory == nil { options.workingDirectory = ProcessEnvironment.workingDirectory }
        let result = try exchange(.launch(options: options))
        // A default name may have been made unique ("sleep-2"): the ready event names the app.
        let ready = result.steps.lazy.compactMap(\.event).last { $0.kind == .ready }
        let record = try listed(ready?.app ?? options.name, all: true, after: "launched")
        return LaunchedApp(record: record, output: result.output, readyEvent: ready)
    }

    /// Takes over a running process tree (``AdoptSource/pid(_:)``) or a cgroup's processes
    /// (``AdoptSource/cgroup(_:)``) as the app ``AdoptOptions/name``: every process is moved
    /// into a fresh cgroup of the app, frozen on arrival so that none forked meanwhile is left
    /// behind, then thawed; from then on it is handled like a launched app. Icebox is not its
    /// parent: its exit status is not known, and its output is not in `icebox logs`.
    /// Corresponds to `icebox adopt NAME --pid PID` or `icebox adopt NAME --cgroup PATH`.
    ///
    /// - Throws: ``IceboxError`` with the reason: no such process or cgroup, a process already
    ///   in an app, a tree that would not stop growing (rolled back) (``ExitCode/failure``);
    ///   PID 1, a kernel thread, a tree or cgroup holding the daemon or this process, a path
    ///   that is not a cgroup (``ExitCode/usage``); a systemd unit's or container's cgroup,
    ///   another user's process for a daemon that may not move it (``ExitCode/permission``).
    public func adopt(_ options: AdoptOptions) throws(IceboxError) -> AdoptedApp {
        let output = try send(.adopt(options: options))
        return AdoptedApp(record: try listed(options.name, all: false, after: "adopted"), output: output)
    }

    /// Hands an app back, still running but no longer supervised: thawed if suspended, its
    /// processes moved to the cgroup they came from (an adopted app's, if it still exists) or to
    /// the daemon's own, its cgroups removed and its record dropped. Refused
    /// (``ExitCode/tryAgain``) while it launches, is in its grace, or is being frozen, thawed or
    /// ended. Corresponds to `icebox release NAME`.
    public func release(_ name: String) throws(IceboxError) -> ReleasedApp {
        guard let record = try apps().last(where: { $0.name == name }) else {
            throw IceboxError(.noSuchApp(name: name), "no app named '\(name)'", hint: "icebox ps lists the apps")
        }
        let output = try send(.release(name: name))
        return ReleasedApp(record: record, output: output)
    }

    /// Active → Background (the notice and the grace) → Suspended: returns once the kernel
    /// has confirmed the freeze, with what was done (``SuspendResult``: the notice, the grace
    /// used and how it ended, the freeze time, the backend, the tasks). `grace` replaces the
    /// app's own for this suspend, as `--grace` does (`.zero`: freeze at once; a negative one
    /// is zero, one past what nanoseconds hold saturates). Blocks the calling thread through
    /// the grace; the `async` form does not. Corresponds to `icebox suspend NAME [--grace DUR]`.
    /// - Throws: ``IceboxError``: no such app, it is still launching (``ExitCode/tryAgain``),
    ///   it ended or was resumed before it was frozen, or the freeze failed.
    @discardableResult
    public func suspend(_ name: String, grace: Duration? = nil) throws(IceboxError) -> SuspendResult {
        try suspend([name], grace: grace)[0]
    }

    /// Suspends several apps at once: one result per name, in the order given.
    /// Corresponds to `icebox suspend NAME...`.
    @discardableResult
    public func suspend(_ names: [String], grace: Duration? = nil) throws(IceboxError) -> [SuspendResult] {
        let steps = try exchange(.suspend(names: names, graceNanos: grace?.saturatingNanoseconds)).steps
        return names.map { SuspendResult(name: $0, steps: Self.steps(of: $0, in: steps)) }
    }

    /// Suspended → Active: returns once the kernel has confirmed the thaw, or, with `waitReady`
    /// (apps launched with `ready: .notify`), once the app says `READY=1` again; with what was
    /// done (``ResumeResult``: the thaw time, or resumed during its grace; with `waitReady`, the
    /// time to READY=1). Corresponds to `icebox resume NAME [--wait-ready]`.
    @discardableResult
    public func resume(_ name: String, waitReady: Bool = false) throws(IceboxError) -> ResumeResult {
        try resume([name], waitReady: waitReady)[0]
    }

    /// Resumes several apps at once: one result per name, in the order given.
    /// Corresponds to `icebox resume NAME...`.
    @discardableResult
    public func resume(_ names: [String], waitReady: Bool = false) throws(IceboxError) -> [ResumeResult] {
        let steps = try exchange(.resume(names: names, waitReady: waitReady)).steps
        return names.map { ResumeResult(name: $0, steps: Self.steps(of: $0, in: steps)) }
    }

    /// Ends an app the graceful way: SIGTERM (a frozen app is thawed first), SIGKILL after
    /// `timeout`; returns once it is reaped, with how it ended (``EndResult``: SIGTERM or
    /// SIGKILL, its exit status, the time it took). Corresponds to `icebox terminate NAME`.
    @discardableResult
    public func terminate(_ name: String, timeout: Duration = .seconds(10)) throws(IceboxError) -> EndResult {
        try terminate([name], timeout: timeout)[0]
    }

    /// Terminates several apps at once: one result per name, in the order given.
    /// Corresponds to `icebox terminate NAME...`.
    @discardableResult
    public func terminate(_ names: [String], timeout: Duration = .seconds(10)) throws(IceboxError) -> [EndResult] {
        let steps = try exchange(.terminate(names: names, timeoutNanos: timeout.saturatingNanoseconds)).steps
        return names.map { EndResult(name: $0, steps: Self.steps(of: $0, in: steps)) }
    }

    /// Kills an app without notice, as memory pressure does, reaps it and removes its cgroup;
    /// it is recorded as evicted. Returns how it ended. Corresponds to `icebox evict NAME`.
    ///
    /// - Parameters:
    ///   - name: The app.
    ///   - toDisk: Checkpoint the app to disk with CRIU instead of killing it: it must be
    ///     suspended and launched with a PID namespace of its own (`--pid-namespace`); a
    ///     resume restores it. If the dump fails the app is killed, as without it.
    ///     Corresponds to `icebox evict --to-disk NAME`.
    @discardableResult
    public func evict(_ name: String, toDisk: Bool = false) throws(IceboxError) -> EndResult {
        try evict([name], toDisk: toDisk)[0]
    }

    /// Evicts several apps at once: one result per name, in the order given.
    /// Corresponds to `icebox evict NAME...`.
    ///
    /// - Parameters:
    ///   - names: The apps.
    ///   - toDisk: Checkpoint each app to disk with CRIU instead of killing it, as for one
    ///     app (``evict(_:toDisk:)-2anup``). Corresponds to `icebox evict --to-disk NAME...`.
    @discardableResult
    public func evict(_ names: [String], toDisk: Bool = false) throws(IceboxError) -> [EndResult] {
        let steps = try exchange(.evict(names: names, toDisk: toDisk)).steps
        return names.map { EndResult(name: $0, steps: Self.steps(of: $0, in: steps)) }
    }

    /// One app's part of what the daemon said: the lines whose event names it, and those
    /// without an event that start with its name ("web  already suspended (nothing to do)").
    static func steps(of name: String, in steps: [Step]) -> [Step] {
        steps.filter { $0.event.map { $0.app == name } ?? $0.line.hasPrefix(name + "  ") }
    }

    /// Starts an ended app again with its last command line and options; it is told
    /// `ICEBOX_LAUNCH_REASON=restore` if it was evicted. Corresponds to `icebox relaunch NAME`.
    public func relaunch(_ name: String) throws(IceboxError) -> LaunchedApp {
        let output = try send(.relaunch(name: name))
        return LaunchedApp(record: try listed(name, all: true, after: "relaunched"), output: output)
    }

    /// The record of the app a call has just made: launched, adopted, relaunched.
    func listed(_ name: String, all: Bool, after done: String) throws(IceboxError) -> AppRecord {
        guard let record = try apps(all: all).last(where: { $0.name == name }) else {
            throw IceboxError(.failure, "the icebox daemon \(done) \(name) but does not list it")
        }
        return record
    }

    /// The app's lifecycle state, ended apps included; nil if the daemon knows no app by that
    /// name. Corresponds to the STATE column of `icebox ps --all`.
    public func state(of name: String) throws(IceboxError) -> AppState? {
        try apps(all: true).last { $0.name == name }?.state
    }

    /// The daemon's apps, oldest launch first, with their memory; with `all`, ended apps too.
    /// Environment values are redacted (names only). Corresponds to `icebox ps --json [--all]`.
    public func apps(all: Bool = false) throws(IceboxError) -> [AppRecord] { try exchange(.ps(all: all)).apps }

    // MARK: Events

    /// The daemon's events as they happen, oldest first: spawn, ready, notice, freeze, thaw, exit,
    /// eviction… for the app `name`, or for every app (and the daemon) if nil.
    ///
    /// The stream follows `$STATE_DIR/events.jsonl` across its rotations through inotify (a look
    /// every 0.5 s if the kernel refuses another instance), from its current end (with `replay`,
    /// from its oldest generation's start): open it before the calls whose events you want. A
    /// thread of its own serves it; it ends when the consumer stops iterating (or its task is
    /// cancelled), or when the state directory goes (a ``Supervisor`` that stops). Corresponds to
    /// `icebox log [NAME] --follow`.
    ///
    /// ```swift
    /// let events = try client.events(for: "web")
    /// try client.suspend("web")
    /// for await event in events where event.kind == .freeze { print(event.humanLine); break }
    /// ```
    public func events(for name: String? = nil, replay: Bool = false) throws(IceboxError) -> AsyncStream<Event> {
        // Opened here, on the caller's thread: the stream starts at the log's end as it is
        // now, not whenever its thread gets going.
        let follower = try FileFollower(path: paths.eventLog, startAtEnd: !replay, follow: true, missingIsEmpty: true)
        let stop: Wakeup
        do { stop = try Wakeup() } catch { throw IceboxError("follow the event log", error) }
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self)
        continuation.onTermination = { _ in stop.signal() }
        do {
            _ = try JoinableThread {
                func deliver(_ line: String) {
                    guard let event = JSONLines.decode(Event.self, line), name == nil || event.app == name else { return }
                    continuation.yield(event)
                }
                // A replay starts with the rotated generations, oldest first.
                for fd in replay ? follower.openOlderGenerations() : [] {
                    _ = LogLines.forward(fd: fd, from: 0, end: .final) { deliver(String(decoding: $0, as: UTF8.self)) }
                    close(fd)
                }
                // An AsyncStream<Event> carries no error: a follow that fails (the log removed with
                // its directory) ends the stream, which is how it says the log is gone.
                _ = try? follower.follow(stopOn: [pollfd(fd: stop.descriptor, events: Int16(POLLIN), revents: 0)], deliver)
                continuation.finish()
            }
        } catch {
            throw IceboxError("follow the event log", error)
        }
        return stream
    }

    // MARK: The exchange

    /// A line of the daemon's for stdout, with the event of its step (a `line` reply's
    /// `event`), from which the typed results are built.
    struct Step: Sendable {
        var line: String
        var event: Event?
    }

    /// Everything the daemon said for one request, kept apart by kind.
    struct Exchange {
        var output = CommandOutput()
        var steps: [Step] = []
        var apps: [AppRecord] = []
    }

    /// Sends the request and reads the replies until `done`, with a deadline, through the
    /// ``ClientSession`` every CLI command uses. With ``cancellation`` set (an `async` form),
    /// a cancelled task shuts the connection down, which ends the wait here.
    func exchange(_ request: ControlRequest) throws(IceboxError) -> Exchange {
        let cancel = cancellation
        var session = session()
        let deadline = DaemonConnection.deadline(for: request, base: timeout.saturatingNanoseconds)
        var result = Exchange()
        var reason: IceboxError.Reason.Wire?
        let code: Int32
        do throws(IceboxError) {
            code = try session.perform(
                request, until: deadline, reason: &reason, cancellation: cancel
            ) { reply in
                switch reply.kind {
                case .line:
                    if let text = reply.text {
                        result.output.lines.append(text)
                        result.steps.append(Step(line: text, event: reply.event))
                    }
                case .warning: if let text = reply.text { result.output.warnings.append(String(text.trimmingPrefix("icebox: "))) }
                case .data: result.apps += reply.apps ?? []
                case .event, .done, .exit: break
                }
            }
        } catch {
            // A cancelled call's connection was shut down under it: that, not the end it
            // caused, is what happened.
            if cancel?.isCancelled == true { throw CallCancellation.error(request.commandName) }
            throw error
        }
        if code != 0 {
            let said = result.output.warnings.isEmpty ? result.output.lines : result.output.warnings
            let message = said.isEmpty ? "\(request.commandName) failed (exit code \(code))" : said.joined(separator: "; ")
            // The typed reason: the daemon's, if it sent one this client knows and it agrees
            // with the code; else what the code alone says.
            let exitCode = ExitCode(rawValue: code) ?? .failure
            let typed = reason.flatMap(IceboxError.Reason.init(wire:)).flatMap { $0.exitCode == exitCode ? $0 : nil }
            throw IceboxError(typed ?? IceboxError.Reason(code: exitCode), message)
        }
        return result
    }

    /// The way to the daemon for one call (or one CLI command): this client's directories,
    /// and whether it starts a daemon when none runs (``autostart``).
    package func session() -> ClientSession {
        ClientSession(
            paths: paths, autostart: autostart, readsLineEvents: readsLineEvents,
            noDaemonHint: autostart == nil
                ? "start a Supervisor, or icebox daemon with ICEBOX_RUNTIME_DIR=\(paths.runtimeDir)"
                : "start one with 'icebox daemon', or drop --no-autostart / ICEBOX_NO_AUTOSTART")
    }
}

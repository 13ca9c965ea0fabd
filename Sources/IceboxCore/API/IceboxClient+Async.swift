/// The `async` forms of ``IceboxClient``'s calls: the same names, arguments and results.
///
/// Swift chooses these in an `async` context (`try await client.suspend("web")`; without `await` it
/// is a compile error), the blocking forms elsewhere. Each runs the blocking exchange on a thread
/// of its own (never the cooperative pool's) and awaits it, so a suspend that waits out a grace
/// holds up no other task.
///
/// Cancelling the task ends the wait at once: the connection is shut down and the call throws an
/// ``IceboxError`` that says so. The daemon goes on with what it had begun (a suspend still freezes
/// the app): the request may or may not have been done, as with an `icebox` command interrupted by
/// Ctrl-C; ask ``state(of:)``.
extension IceboxClient {
    /// Runs a blocking call of this client on a thread of its own, cancellable.
    func detached<T: Sendable>(_ call: @escaping @Sendable (IceboxClient) throws(IceboxError) -> T) async throws(IceboxError) -> T {
        try await CallCancellation.run { (cancellation) throws(IceboxError) -> T in
            var cancellable = self
            cancellable.cancellation = cancellation
            return try call(cancellable)
        }
    }

    /// Checks that the daemon answers; see ``ping()``.
    @discardableResult
    public func ping() async throws(IceboxError) -> CommandOutput {
        try await detached { (c) throws(IceboxError) in try c.ping() }
    }

    /// Launches an app and returns once it is ready; see ``launch(_:)``. Corresponds to `icebox launch`.
    public func launch(_ options: LaunchOptions) async throws(IceboxError) -> LaunchedApp {
        try await detached { (c) throws(IceboxError) in try c.launch(options) }
    }

    /// Takes over running processes as an app; see ``adopt(_:)``. Corresponds to `icebox adopt`.
    public func adopt(_ options: AdoptOptions) async throws(IceboxError) -> AdoptedApp {
        try await detached { (c) throws(IceboxError) in try c.adopt(options) }
    }

    /// Hands an app back, still running; see ``release(_:)``. Corresponds to `icebox release`.
    @discardableResult
    public func release(_ name: String) async throws(IceboxError) -> ReleasedApp {
        try await detached { (c) throws(IceboxError) in try c.release(name) }
    }

    /// Suspends an app without blocking a thread through its grace; see
    /// ``suspend(_:grace:)-4fsnk``.
    @discardableResult
    public func suspend(_ name: String, grace: Duration? = nil) async throws(IceboxError) -> SuspendResult {
        try await detached { (c) throws(IceboxError) in try c.suspend(name, grace: grace) }
    }

    /// Suspends several apps at once; one result per name. Corresponds to `icebox suspend NAME...`.
    @discardableResult
    public func suspend(_ names: [String], grace: Duration? = nil) async throws(IceboxError) -> [SuspendResult] {
        try await detached { (c) throws(IceboxError) in try c.suspend(names, grace: grace) }
    }

    /// Resumes an app; see ``resume(_:waitReady:)-8uzw0``. Corresponds to `icebox resume NAME`.
    @discardableResult
    public func resume(_ name: String, waitReady: Bool = false) async throws(IceboxError) -> ResumeResult {
        try await detached { (c) throws(IceboxError) in try c.resume(name, waitReady: waitReady) }
    }

    /// Resumes several apps at once; one result per name. Corresponds to `icebox resume NAME...`.
    @discardableResult
    public func resume(_ names: [String], waitReady: Bool = false) async throws(IceboxError) -> [ResumeResult] {
        try await detached { (c) throws(IceboxError) in try c.resume(names, waitReady: waitReady) }
    }

    /// Terminates an app; see ``terminate(_:timeout:)-91jpu``. Corresponds to `icebox terminate NAME`.
    @discardableResult
    public func terminate(_ name: String, timeout: Duration = .seconds(10)) async throws(IceboxError) -> EndResult {
        try await detached { (c) throws(IceboxError) in try c.terminate(name, timeout: timeout) }
    }

    /// Terminates several apps at once; one result per name. Corresponds to `icebox terminate NAME...`.
    @discardableResult
    public func terminate(_ names: [String], timeout: Duration = .seconds(10)) async throws(IceboxError) -> [EndResult] {
        try await detached { (c) throws(IceboxError) in try c.terminate(names, timeout: timeout) }
    }

    /// Evicts an app, or checkpoints it to disk with `toDisk`; see ``evict(_:toDisk:)-2anup``.
    @discardableResult
    public func evict(_ name: String, toDisk: Bool = false) async throws(IceboxError) -> EndResult {
        try await detached { (c) throws(IceboxError) in try c.evict(name, toDisk: toDisk) }
    }

    /// Evicts several apps, or checkpoints them to disk with `toDisk`; one result per name.
    @discardableResult
    public func evict(_ names: [String], toDisk: Bool = false) async throws(IceboxError) -> [EndResult] {
        try await detached { (c) throws(IceboxError) in try c.evict(names, toDisk: toDisk) }
    }

    /// Relaunches an ended app; see ``relaunch(_:)``. Corresponds to `icebox relaunch NAME`.
    public func relaunch(_ name: String) async throws(IceboxError) -> LaunchedApp {
        try await detached { (c) throws(IceboxError) in try c.relaunch(name) }
    }

    /// An app's state; see ``state(of:)``. Corresponds to `icebox ps --all`.
    public func state(of name: String) async throws(IceboxError) -> AppState? {
        try await detached { (c) throws(IceboxError) in try c.state(of: name) }
    }

    /// The apps; see ``apps(all:)``. Corresponds to `icebox ps --json`.
    public func apps(all: Bool = false) async throws(IceboxError) -> [AppRecord] {
        try await detached { (c) throws(IceboxError) in try c.apps(all: all) }
    }
}

/// The `async` forms of ``Supervisor``'s calls, as ``IceboxClient``'s (same names; Swift
/// chooses these in an `async` context): the blocking exchange with the engine runs on a
/// thread of its own, and cancelling the task ends the wait (the request may or may not
/// have been done: ask ``state(of:)``).
extension Supervisor {
    /// Launches an app; see ``IceboxClient/launch(_:)``. Corresponds to `icebox launch`.
    public func launch(_ options: LaunchOptions) async throws(IceboxError) -> LaunchedApp { try await client.launch(options) }

    /// Takes over running processes as an app; see ``IceboxClient/adopt(_:)``. Corresponds to `icebox adopt`.
    public func adopt(_ options: AdoptOptions) async throws(IceboxError) -> AdoptedApp { try await client.adopt(options) }

    /// Hands an app back, still running; see ``IceboxClient/release(_:)``. Corresponds to `icebox release`.
    @discardableResult
    public func release(_ name: String) async throws(IceboxError) -> ReleasedApp { try await client.release(name) }

    /// Suspends an app without blocking a thread through its grace; see
    /// ``IceboxClient/suspend(_:grace:)-(String,_)``. Corresponds to `icebox suspend`.
    @discardableResult
    public func suspend(_ name: String, grace: Duration? = nil) async throws(IceboxError) -> SuspendResult {
        try await client.suspend(name, grace: grace)
    }

    /// Resumes an app; see ``IceboxClient/resume(_:waitReady:)-(String,_)``. Corresponds to `icebox resume`.
    @discardableResult
    public func resume(_ name: String, waitReady: Bool = false) async throws(IceboxError) -> ResumeResult {
        try await client.resume(name, waitReady: waitReady)
    }

    /// Terminates an app; see ``IceboxClient/terminate(_:timeout:)-(String,_)``. Corresponds to `icebox terminate`.
    @discardableResult
    public func terminate(_ name: String, timeout: Duration = .seconds(10)) async throws(IceboxError) -> EndResult {
        try await client.terminate(name, timeout: timeout)
    }

    /// Evicts an app; see ``IceboxClient/evict(_:)-(String)``. Corresponds to `icebox evict`.
    @discardableResult
    public func evict(_ name: String) async throws(IceboxError) -> EndResult { try await client.evict(name) }

    /// Relaunches an ended app; see ``IceboxClient/relaunch(_:)``. Corresponds to `icebox relaunch`.
    public func relaunch(_ name: String) async throws(IceboxError) -> LaunchedApp { try await client.relaunch(name) }

    /// An app's state; see ``IceboxClient/state(of:)``. Corresponds to `icebox ps --all`.
    public func state(of name: String) async throws(IceboxError) -> AppState? { try await client.state(of: name) }

    /// The apps; see ``IceboxClient/apps(all:)``. Corresponds to `icebox ps --json`.
    public func apps(all: Bool = false) async throws(IceboxError) -> [AppRecord] { try await client.apps(all: all) }
}

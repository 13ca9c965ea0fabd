/// The `async` forms of ``Supervisor``'s calls, as ``IceboxClient``'s: the exchange runs on a
/// thread of its own, and cancelling the task ends the wait (the request may or may not have
/// been done: ask ``state(of:)``). ``stop(timeout:)`` has none on purpose: `defer { try?
/// supervisor.stop() }` must compile in an `async` test, where `defer` cannot await.
extension Supervisor {
    /// Launches an app; see ``IceboxClient/launch(_:)-7an0t``. Corresponds to `icebox launch`.
    public func launch(_ options: LaunchOptions) async throws(IceboxError) -> LaunchedApp { try await client.launch(options) }

    /// Takes over running processes as an app; see ``IceboxClient/adopt(_:)-62exe``. Corresponds to `icebox adopt`.
    public func adopt(_ options: AdoptOptions) async throws(IceboxError) -> AdoptedApp { try await client.adopt(options) }

    /// Hands an app back, still running; see ``IceboxClient/release(_:)-49msn``. Corresponds to `icebox release`.
    @discardableResult
    public func release(_ name: String) async throws(IceboxError) -> ReleasedApp { try await client.release(name) }

    /// Suspends an app without blocking a thread through its grace; see
    /// ``IceboxClient/suspend(_:grace:)-4fsnk``.
    @discardableResult
    public func suspend(_ name: String, grace: Duration? = nil) async throws(IceboxError) -> SuspendResult {
        try await client.suspend(name, grace: grace)
    }

    /// Resumes an app; see ``IceboxClient/resume(_:waitReady:)-8uzw0``. Corresponds to `icebox resume`.
    @discardableResult
    public func resume(_ name: String, waitReady: Bool = false) async throws(IceboxError) -> ResumeResult {
        try await client.resume(name, waitReady: waitReady)
    }

    /// Terminates an app; see ``IceboxClient/terminate(_:timeout:)-91jpu``. Corresponds to `icebox terminate`.
    @discardableResult
    public func terminate(_ name: String, timeout: Duration = .seconds(10)) async throws(IceboxError) -> EndResult {
        try await client.terminate(name, timeout: timeout)
    }

    /// Evicts an app, or checkpoints it to disk with `toDisk`; see
    /// ``IceboxClient/evict(_:toDisk:)-2anup``.
    @discardableResult
    public func evict(_ name: String, toDisk: Bool = false) async throws(IceboxError) -> EndResult {
        try await client.evict(name, toDisk: toDisk)
    }

    /// Relaunches an ended app; see ``IceboxClient/relaunch(_:)-8bdfj``. Corresponds to `icebox relaunch`.
    public func relaunch(_ name: String) async throws(IceboxError) -> LaunchedApp { try await client.relaunch(name) }

    /// An app's state; see ``IceboxClient/state(of:)-i4f5``. Corresponds to `icebox ps --all`.
    public func state(of name: String) async throws(IceboxError) -> AppState? { try await client.state(of: name) }

    /// The apps; see ``IceboxClient/apps(all:)-5ebi5``. Corresponds to `icebox ps --json`.
    public func apps(all: Bool = false) async throws(IceboxError) -> [AppRecord] { try await client.apps(all: all) }

    /// Checks that the engine answers; see ``IceboxClient/ping()-4yhqk``.
    @discardableResult
    public func ping() async throws(IceboxError) -> CommandOutput { try await client.ping() }
}

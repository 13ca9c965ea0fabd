extension Supervisor {
    /// Starts a supervisor, runs `body` with it, and stops it on the way out, whether `body`
    /// returns or throws: the scoped form for a test, which cannot leave one running.
    ///
    /// ```swift
    /// @Test func napFreezes() throws {
    ///     try Supervisor.with { supervisor in
    ///         _ = try supervisor.launch(LaunchOptions(name: "nap", command: ["sleep", "100"]))
    ///         try supervisor.suspend("nap", grace: .zero)
    ///         #expect(try supervisor.state(of: "nap") == .suspended)
    ///     }
    /// }
    /// ```
    ///
    /// The arguments are ``start(runtimeDirectory:stateDirectory:cgroupRoot:readyTimeout:)``'s.
    /// - Throws: what `body` throws (the stop still runs; what it finds left behind is then
    ///   not reported over `body`'s error), else what ``stop(timeout:)`` throws: a process,
    ///   cgroup or directory the engine left behind.
    public static func with<Result>(
        runtimeDirectory: String? = nil, stateDirectory: String? = nil, cgroupRoot: String? = nil,
        _ body: (Supervisor) throws -> Result
    ) throws -> Result {
        let supervisor = try start(runtimeDirectory: runtimeDirectory, stateDirectory: stateDirectory, cgroupRoot: cgroupRoot)
        return try runThenStop(stop: { try supervisor.stop() }) { try body(supervisor) }
    }

    /// The same for an `async` body (an `async` test that awaits events).
    public static func with<Result>(
        runtimeDirectory: String? = nil, stateDirectory: String? = nil, cgroupRoot: String? = nil,
        _ body: (Supervisor) async throws -> Result
    ) async throws -> Result {
        let supervisor = try start(runtimeDirectory: runtimeDirectory, stateDirectory: stateDirectory, cgroupRoot: cgroupRoot)
        return try await runThenStop(stop: { try supervisor.stop() }) { try await body(supervisor) }
    }
}

/// The scoped forms' one rule (`Supervisor.with`, `IceboxDaemon.with`): `body` runs, then
/// `stop`, whether `body` returns or throws.
func runThenStop<Result>(stop: () throws -> Void, _ body: () throws -> Result) throws -> Result {
    let result: Result
    do { result = try body() } catch {
        // The body's error is the one thrown; a failing stop here must not hide it.
        try? stop()
        throw error
    }
    try stop()
    return result
}

/// The same for an `async` body.
func runThenStop<Result>(stop: () throws -> Void, _ body: () async throws -> Result) async throws -> Result {
    let result: Result
    do { result = try await body() } catch {
        // As above: the body's error is the one thrown; a failing stop must not hide it.
        try? stop()
        throw error
    }
    try stop()
    return result
}

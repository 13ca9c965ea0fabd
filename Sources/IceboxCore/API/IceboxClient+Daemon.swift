extension IceboxClient {
    /// Stops the daemon: with `terminateApps`, every app is first terminated the graceful way
    /// (SIGTERM, SIGKILL after `timeout`) and reaped; without, the apps keep running for the next
    /// daemon on the same directories to re-adopt. Returns once the daemon has answered (its lines:
    /// the apps it ended); it exits once its last client is gone (wait for its process, as
    /// ``IceboxDaemon/stop(terminateApps:timeout:)`` does, to know it has). Corresponds to `icebox
    /// daemon --stop [--terminate-apps]`.
    /// - Throws: ``IceboxError``: ``IceboxError/Reason/daemonUnavailable`` if no daemon runs.
    @discardableResult
    public func stopDaemon(terminateApps: Bool, timeout: Duration = .seconds(10)) throws(IceboxError) -> CommandOutput {
        try send(.stop(terminateApps: terminateApps, timeoutNanos: timeout.saturatingNanoseconds))
    }
}

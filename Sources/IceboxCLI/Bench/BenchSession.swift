import Glibc
import IceboxCore
import IceboxSystem

/// One `icebox bench` in progress: it drives the daemon through cold launches, suspends,
/// holds, resumes and evictions of one app, timing each from this process with the same
/// readiness check for cold and hot starts, so the two compare like with like.
struct BenchSession {
    struct Run {
        var cold: UInt64
        var hot: UInt64
        var relaunch: UInt64?
        var disk: DiskRun?  // --to-disk only
        /// The app's CPU time in each step, from its cgroup's cpu.stat (nil: no v2 cgroup).
        /// Cold and relaunch: all a fresh instance used until ready; hot: resume request to
        /// ready; suspend: suspend request until frozen (the app's handling of the notice).
        var coldCPU: CPUTime?
        var hotCPU: CPUTime?
        var suspendCPU: CPUTime?
        var relaunchCPU: CPUTime?
    }

    /// With --to-disk, after the hot resume: suspended again, checkpointed to disk and
    /// resumed from there until ready.
    struct DiskRun {
        var checkpoint: UInt64  // the daemon's figure (its event): evict request to images on disk
        var imageBytes: UInt64
        var memoryFreedBytes: UInt64?  // the app's memory before the dump (nil: unknown)
        var restore: UInt64  // timed here as the hot resume is: resume request until ready
        var restoreCPU: CPUTime?  // the fresh cgroup's until ready, criu's restorer's included
    }

    /// The app's name when --name is not given: "bench", so that a benchmark leaves one
    /// record behind however often it runs (the daemon keeps every ended app's record and has
    /// no request to drop one), or bench-PID while another benchmark's "bench" is running.
    static func defaultName(_ client: DaemonClient) throws(IceboxError) -> String {
        var client = client
        var running = false
        let code = try client.perform(.ps(all: false), onData: { records in running = records.contains { $0.name == "bench" } })
        if code != 0 { throw IceboxError(ExitCode(rawValue: code) ?? .failure, "cannot list the apps to name the benchmark's app") }
        return running ? "bench-\(getpid())" : "bench"
    }

    /// The signal that interrupted the benchmark (a class: the waits that notice it do not
    /// mutate the session).
    final class Interruption { var signal: Int32? }

    var client: DaemonClient
    let options: LaunchOptions
    let holdNanos: UInt64
    var toDisk = false
    let signalFD: Int32
    var appLive = false
    let interruption = Interruption()
    var cgroup: String?  // the running instance's v2 cgroup, for its CPU time

    /// Sends one request; returns its lines and the events its replies carry, handing every
    /// reply to `handle` too; a failure becomes an error with its lines. Through `perform`: a
    /// daemon exiting idle between our connect and its accept (the app ended before it was
    /// ready) resets the connection, and the request goes to the next daemon.
    mutating func exchange(
        _ request: ControlRequest, _ handle: (ControlReply) -> Void = { _ in }
    ) throws(IceboxError) -> (lines: [String], events: [Event]) {
        var lines: [String] = []
        var events: [Event] = []
        var reason: IceboxError.Reason.Wire?
        let code = try client.session.perform(request, until: DaemonClient.deadline(for: request), reason: &reason) { reply in
            if reply.kind == .line || reply.kind == .warning, let t = reply.text { lines.append(t) }
            if let event = reply.event { events.append(event) }
            handle(reply)
        }
        if code != 0 { throw IceboxError(ExitCode(rawValue: code) ?? .failure, lines.joined(separator: "; ").replacingPrefix("icebox: ")) }
        return (lines, events)
    }

    /// The daemon waits for readiness itself only for `notify`; every other probe runs here.
    var daemonSideReadiness: Bool { if case .notify = options.ready { return true } else { return false } }

    mutating func launch() throws(IceboxError) -> UInt64 {
        var launchOptions = options
        if !daemonSideReadiness { launchOptions.ready = .exec }
        let request = ControlRequest.launch(options: launchOptions)
        let start = Clock.monotonicNanos()
        _ = try exchange(request)
        appLive = true
        try waitUntilReady(since: start, what: "launch")
        let elapsed = Clock.monotonicNanos() - start
        cgroup = try self.records().first { $0.name == options.name }?.cgroup
        return elapsed
    }

    /// The apps, as `ps` (`all`: as `ps --all`) lists them.
    mutating func records(all: Bool = false) throws(IceboxError) -> [AppRecord] {
        var records: [AppRecord] = []
        _ = try exchange(.ps(all: all)) { reply in if reply.kind == .data { records = reply.apps ?? [] } }
        return records
    }

    func cpu() -> CPUTime? { cgroup.flatMap(CPUTime.ofCgroup) }

    mutating func resume() throws(IceboxError) -> UInt64 {
        let request = ControlRequest.resume(names: [options.name], waitReady: daemonSideReadiness)
        let start = Clock.monotonicNanos()
        _ = try exchange(request)
        try waitUntilReady(since: start, what: "resume")
        return Clock.monotonicNanos() - start
    }

    mutating func suspend() throws(IceboxError) { _ = try exchange(.suspend(names: [options.name])) }

    mutating func evict() throws(IceboxError) -> UInt64 {
        let start = Clock.monotonicNanos()
        _ = try exchange(.evict(names: [options.name]))
        appLive = false
        return Clock.monotonicNanos() - start
    }

    /// Checkpoints the (suspended) app to disk; returns the daemon's checkpoint event. A dump
    /// that failed ends in a kill instead (the app is evicted): that fails the benchmark
    /// with criu's reason, so a relaunch is never measured as a restore.
    mutating func evictToDisk() throws(IceboxError) -> Event {
        let since = Clock.monotonicNanos()
        let (lines, events) = try exchange(.evict(names: [options.name], toDisk: true))
        if let event = events.first(where: { $0.kind == .checkpoint && $0.to == .onDisk }) { return event }
        appLive = false  // killed instead
        // The failed checkpoint's event is logged, not sent: its detail has criu's reason.
        let failed = BenchReport.events(of: options.name, since: since, in: client.paths).last {
            $0.kind == .checkpoint && $0.reason == "failed"
        }
        throw IceboxError(
            .failure,
            "\(options.name) could not go to disk: "
                + (failed?.detail ?? lines.joined(separator: "; ").replacingPrefix("icebox: ")),
            hint: "see 'icebox doctor' for criu, and 'icebox log \(options.name)'")
    }

    /// How often the readiness check asks the daemon whether the app still runs, so that an
    /// app that ended fails the benchmark then, not at --ready-timeout. Not sooner: the
    /// question is a round trip to the daemon that would land inside a cold start's timing.
    static let livenessCheckNanos: UInt64 = 1_000_000_000

    /// Polls the app with the readiness check until it answers. A server's port has no event
    /// to wait on: retried after a back-off from 50 µs (a thawed server answers at once) to 10 ms.
    mutating func waitUntilReady(since start: UInt64, what: String) throws(IceboxError) {
        let deadline = start.saturatingAdd(options.readyTimeoutNanos)
        var backoff: UInt64 = 50_000
        var livenessAt = start.saturatingAdd(Self.livenessCheckNanos)
        while true {
            let now = Clock.monotonicNanos()
            let attemptDeadline = min(deadline, now + 1_000_000_000)
            let ready: Bool
            switch options.ready {
            case .exec, .notify: return
            case .tcp(let port): ready = ReadinessCheck.tcp(port: port, deadline: attemptDeadline)
            case .http(let url): ready = ReadinessCheck.http(url, deadline: attemptDeadline)
            case .command(let text): ready = runProbe(text, deadline: attemptDeadline)
            }
            if ready { return }
            var after = Clock.monotonicNanos()
            if after >= livenessAt {
                livenessAt = after.saturatingAdd(Self.livenessCheckNanos)
                try requireRunning(what: what)
                after = Clock.monotonicNanos()  // the question was a round trip to the daemon
            }
            if after >= deadline {
                throw IceboxError(
                    .failure,
                    "\(options.name) was not ready (\(options.ready)) within \(DurationText.format(options.readyTimeoutNanos)) of its \(what)",
                    hint: "check the readiness probe, or raise --ready-timeout")
            }
            try pause(backoff)
            backoff = min(backoff * 2, 10_000_000)
        }
    }

    /// Throws when the app has ended, saying how.
    mutating func requireRunning(what: String) throws(IceboxError) {
        guard let record = try records(all: true).last(where: { $0.name == options.name }), record.state.isEnded else { return }
        appLive = false
        // Worded as `icebox launch` words it ("ended before it was ready: exited with status 3").
        let how = record.ending ?? record.state.rawValue
        throw IceboxError(
            .failure, "\(options.name) ended before it was ready (\(options.ready)) after its \(what): \(how)",
            hint: "see 'icebox logs \(options.name)' for what it printed")
    }

    func runProbe(_ text: String, deadline: UInt64) -> Bool {
        var request = SpawnRequest(executable: "/bin/sh", arguments: ["sh", "-c", text], environment: ProcessEnvironment.current)
        request.workingDirectory = options.workingDirectory
        guard let probe = try? Spawner.spawn(request) else { return false }
        if let ended = try? probe.handle.wait(until: deadline) { return ended == .exited(0) }
        _ = try? probe.handle.send(SIGKILL)
        _ = try? probe.handle.wait(until: Clock.monotonicNanos() + 1_000_000_000)
        return false
    }

    /// Waits for the given time, or until Ctrl-C/SIGTERM arrives (then records the signal and
    /// throws): an interrupt must not be missed during the hold or the probe back-off.
    func pause(_ nanos: UInt64) throws(IceboxError) {
        if ((try? Poll.wait(signalFD, events: Int16(POLLIN), timeoutNanos: nanos)) ?? 0) > 0 {
            let signal = Signals.drain(signalFD: signalFD).first ?? SIGINT
            interruption.signal = interruption.signal ?? signal
            throw IceboxError(.failure, "interrupted by \(Signals.name(of: signal))")
        }
    }

    func checkInterrupted() throws(IceboxError) { try pause(0) }

    /// Waits until the app is at rest before it is suspended: its cgroup's CPU time grows by
    /// less than 5% of a 2 ms window, for at most 200 ms (without a v2 cgroup, no wait). A
    /// runtime with background threads (node, the JVM) finishes the cold request's work for a
    /// few ms after it answered; frozen then, the hot resume would time that leftover (node:
    /// 5.6–7.3 ms frozen at once, 3.8–4.3 ms 2–4 ms later). No event says "idle".
    func waitUntilAtRest() throws(IceboxError) {
        guard var last = cpu() else { return }
        let limit = Clock.monotonicNanos().saturatingAdd(Self.restLimitNanos)
        while Clock.monotonicNanos() < limit {
            try pause(Self.restWindowNanos)
            guard let now = cpu() else { return }
            let grown = now.since(last)
            if grown.user.saturatingAdd(grown.system) < Self.restWindowNanos / 20 { return }
            last = now
        }
    }

    static let restWindowNanos: UInt64 = 2_000_000
    static let restLimitNanos: UInt64 = 200_000_000

    /// One run: cold launch → ready, suspend, hold, resume → ready, and maybe evict and
    /// relaunch → ready; the app is evicted at the end so the next run starts cold.
    mutating func run(relaunchAfterEviction: Bool) throws(IceboxError) -> Run {
        let cold = try launch()
        let coldCPU = cpu()
        try checkInterrupted()
        try waitUntilAtRest()
        let beforeSuspend = cpu()
        try suspend()
        let frozen = cpu()
        try pause(holdNanos)
        let hot = try resume()
        let resumed = cpu()
        var disk: DiskRun?
        if toDisk {
            try checkInterrupted()
            try waitUntilAtRest()
            try suspend()
            let checkpoint = try evictToDisk()
            try pause(holdNanos)
            let restore = try resume()
            // The restored instance's cgroup is a fresh one.
            cgroup = try self.records().first { $0.name == options.name }?.cgroup
            disk = DiskRun(
                checkpoint: checkpoint.durationNanos ?? 0, imageBytes: checkpoint.imageBytes ?? 0,
                memoryFreedBytes: checkpoint.memoryBeforeBytes, restore: restore, restoreCPU: cpu())
        }
        var relaunch: UInt64?
        var relaunchCPU: CPUTime?
        if relaunchAfterEviction {
            try checkInterrupted()
            let evicted = try evict()
            relaunch = evicted + (try launch())
            relaunchCPU = cpu()
        }
        _ = try evict()
        func spent(_ from: CPUTime?, _ to: CPUTime?) -> CPUTime? {
            guard let from, let to else { return nil }
            return to.since(from)
        }
        return Run(
            cold: cold, hot: hot, relaunch: relaunch, disk: disk, coldCPU: coldCPU, hotCPU: spent(frozen, resumed),
            suspendCPU: spent(beforeSuspend, frozen), relaunchCPU: relaunchCPU)
    }

    /// Best effort on the way out: evicts the app if it still runs, then drops its record,
    /// so a benchmark leaves nothing running and no row in `icebox ps --all`.
    mutating func cleanUp() {
        if appLive { _ = try? evict() }
        _ = try? exchange(.forget(names: [options.name]))
    }
}

extension String {
    func replacingPrefix(_ prefix: String) -> String {
        hasPrefix(prefix) ? String(dropFirst(prefix.count)) : self
    }
}

/// How a terminate or an eviction ended an app, from the event of its end: SIGTERM or SIGKILL, its
/// exit status and how long it took; or, for an eviction to disk, that it rests there (its images'
/// size, the memory it freed) or why the checkpoint failed and it was killed.
/// ``IceboxClient/terminate(_:timeout:)-91jpu`` and ``IceboxClient/evict(_:toDisk:)-2anup`` return
/// one.
///
/// ```swift
/// let result = try supervisor.terminate("web", timeout: .seconds(5))
/// #expect(result.how == .sigterm)       // it went on SIGTERM, before the time-out
/// #expect(result.exitStatus == 143)
/// ```
public struct EndResult: Sendable, Equatable, CustomStringConvertible {
    /// What ended it.
    public enum How: Sendable, Equatable {
        /// SIGTERM sufficed: the app ended before the time-out.
        case sigterm
        /// The app was still running at the time-out: SIGKILL.
        case sigkillAfterTimeout
        /// Evicted: killed without notice (SIGKILL) and reaped.
        case evicted
        /// Checkpointed to disk (``AppState/onDisk``): CRIU wrote its state and ended its
        /// processes; a resume restores it.
        case checkpointed
        /// It ended otherwise (on its own meanwhile, or a newer daemon's reason).
        case other(String?)
    }

    /// The app's name.
    public var name: String
    /// The state it ended in: ``AppState/terminated`` or ``AppState/evicted`` (or
    /// ``AppState/onDisk``: not an end, its processes' only).
    public var state: AppState?
    /// What ended it.
    public var how: How
    /// Its exit status, the shell's way (128 + the signal for a signal), nil if unknown
    /// (an adopted app: icebox is not its parent).
    public var exitStatus: Int32?
    /// From the request to the app's end (reaped, its cgroups removed).
    public var time: Duration
    /// Checkpointed: the images' size on disk, in bytes; nil otherwise.
    public var imageBytes: UInt64?
    /// Checkpointed: the app's memory just before the dump, as the kernel counted it (what the
    /// dump freed), in bytes; nil otherwise.
    public var memoryFreedBytes: UInt64?
    /// An eviction to disk whose checkpoint failed (the app was killed instead): why.
    public var checkpointFailure: String?
    /// The lines `icebox terminate` or `icebox evict` prints for this app.
    public var lines: [String]
    /// The events of this app's steps, as in the event log (its end).
    public var events: [Event]

    /// What `icebox terminate` or `icebox evict` prints for this app, ``lines`` one a step.
    public var description: String { lines.joined(separator: "\n") }

    init(name: String, steps: [IceboxClient.Step]) {
        self.name = name
        lines = steps.map(\.line)
        events = steps.compactMap(\.event)
        let end = events.last { $0.kind == .exit || $0.kind == .evict || ($0.kind == .checkpoint && $0.to == .onDisk) }
        checkpointFailure = events.last { $0.kind == .checkpoint && $0.reason == "failed" }?.detail
        if end?.kind == .checkpoint {
            imageBytes = end?.imageBytes
            memoryFreedBytes = end?.memoryBeforeBytes
        }
        state = end?.to
        exitStatus = end?.exitStatus
        time = .nanoseconds(end?.durationNanos ?? 0)
        // The wire's reason, read back through the lifecycle's own type (`AppEnd.signal`).
        switch (end?.kind, end?.reason.flatMap(EndSignal.init(rawValue:))) {
        case (.evict?, _): how = .evicted
        case (.checkpoint?, _): how = .checkpointed
        case (_, .sigterm?): how = .sigterm
        case (_, .sigkill?): how = .sigkillAfterTimeout
        case (_, nil): how = .other(end?.reason)
        }
    }
}

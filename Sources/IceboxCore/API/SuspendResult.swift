import IceboxSystem

/// What a suspend did to one app, from the events of its steps, not the text: the notice, the
/// grace and how it ended, the kernel's freeze time, the backend and the tasks frozen.
/// ``IceboxClient/suspend(_:grace:)-4fsnk`` returns one.
///
/// ```swift
/// let result = try supervisor.suspend("web", grace: .seconds(3))
/// #expect(result.graceEnd == .ready)            // the app said READY=1 in time
/// #expect(result.graceUsed < .seconds(3))
/// #expect(result.freezeTime > .zero)
/// ```
public struct SuspendResult: Sendable, Equatable, CustomStringConvertible {
    /// The background notice the app got before its grace.
    public enum Notice: Sendable, Equatable {
        /// This signal was sent (SIGUSR1 unless `--background-signal` says otherwise).
        case signal(Int32)
        /// None: the app has no handler for SIGUSR1 (`--background-signal auto`): it would
        /// have killed the app.
        case noHandler
        /// None: `--background-signal none`.
        case disabled
    }

    /// How the grace ended.
    public enum GraceEnd: Sendable, Equatable {
        /// The app sent READY=1 on its NOTIFY_SOCKET: it cut its grace short.
        case ready
        /// The grace ran out (the app's, this call's, or the memory policy's cut).
        case expired
        /// A grace of zero: frozen at once.
        case zero
        /// The app was suspended already: nothing was done.
        case alreadySuspended
        /// Another reason the daemon gave (a newer daemon's).
        case other(String)
    }

    /// The app's name.
    public var name: String
    /// The notice, nil if this call did not send it (the app was already in its grace,
    /// suspended by another call, or already suspended).
    public var notice: Notice?
    /// The grace the app was granted at its notice (nil if this call did not see the notice).
    public var graceGranted: Duration?
    /// The grace the app used: from the notice to the freeze's start.
    public var graceUsed: Duration
    /// How the grace ended.
    public var graceEnd: GraceEnd
    /// How long the kernel took to confirm the freeze, as the daemon measured it (request
    /// written → `cgroup.events` says `frozen 1`, or the v1 freezer or every thread stopped).
    public var freezeTime: Duration
    /// The freezer that froze it; nil if nothing was frozen (already suspended).
    public var backend: BackendKind?
    /// The processes (threads, for the signal backend) the freeze confirmed.
    public var tasks: Int
    /// The lines `icebox suspend` prints for this app.
    public var lines: [String]
    /// The events of this app's steps, as in the event log (the notice, the freeze).
    public var events: [Event]

    /// What `icebox suspend` prints for this app, ``lines`` one a step.
    public var description: String { lines.joined(separator: "\n") }

    init(name: String, steps: [IceboxClient.Step]) {
        self.name = name
        lines = steps.map(\.line)
        events = steps.compactMap(\.event)
        let noticeEvent = events.last { $0.kind == .notice }
        switch noticeEvent?.reason {
        case NoticeSent.disabled.reason: notice = .disabled
        case NoticeSent.noHandler.reason: notice = .noHandler
        case let name?: notice = Signals.number(of: name).map(Notice.signal)
        case nil: notice = nil
        }
        graceGranted = noticeEvent?.grace
        let freeze = events.last { $0.kind == .freeze }
        graceUsed = .nanoseconds(freeze?.graceNanos ?? 0)
        // The wire's reason, read back through the lifecycle's own type (one spelling of each).
        switch freeze?.reason {
        case nil: graceEnd = .alreadySuspended
        case let reason?:
            switch GraceEnding(rawValue: reason) {
            case .ready?: graceEnd = .ready
            case .expired?: graceEnd = .expired
            case .zero?: graceEnd = .zero
            case nil: graceEnd = .other(reason)
            }
        }
        freezeTime = .nanoseconds(freeze?.durationNanos ?? 0)
        backend = freeze?.backend
        tasks = freeze?.tasks ?? 0
    }
}

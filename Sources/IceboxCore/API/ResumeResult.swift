/// What a resume did to one app, from the events of its steps: the kernel's thaw time (or that it
/// was resumed during its grace, with nothing to thaw), the backend and tasks, and with `waitReady`
/// how long the app took to say READY=1 again. ``IceboxClient/resume(_:waitReady:)-8uzw0`` returns
/// one.
///
/// ```swift
/// let result = try supervisor.resume("web")
/// #expect(result.how == .thawed)
/// #expect(result.thawTime! > .zero)
/// ```
public struct ResumeResult: Sendable, Equatable, CustomStringConvertible {
    /// What the resume had to do.
    public enum How: Sendable, Equatable {
        /// The app was suspended: the kernel thawed it.
        case thawed
        /// The app was still in its grace: the freeze was withdrawn, nothing to thaw.
        case resumedDuringGrace
        /// The app was active already: nothing was done.
        case alreadyActive
        /// The app was on disk (``AppState/onDisk``): CRIU restored it where it stopped.
        case restored
    }

    /// The app's name.
    public var name: String
    /// What was done.
    public var how: How
    /// How long the kernel took to confirm the thaw, as the daemon measured it; nil unless
    /// ``how`` is ``How/thawed``.
    public var thawTime: Duration?
    /// How long CRIU's restore took; nil unless ``how`` is ``How/restored``.
    public var restoreTime: Duration?
    /// The freezer that thawed it; nil if nothing was thawed.
    public var backend: BackendKind?
    /// The processes (threads, for the signal backend) the thaw confirmed; nil if nothing was
    /// thawed.
    public var tasks: Int?
    /// With `waitReady` (an app launched with `ready: .notify`): the time from the resume to
    /// the app's READY=1 (the hot start). nil otherwise.
    public var readyAfter: Duration?
    /// The lines `icebox resume` prints for this app.
    public var lines: [String]
    /// The events of this app's steps, as in the event log (the thaw or resume, the ready).
    public var events: [Event]

    /// What `icebox resume` prints for this app, ``lines`` one a step.
    public var description: String { lines.joined(separator: "\n") }

    init(name: String, steps: [IceboxClient.Step]) {
        self.name = name
        lines = steps.map(\.line)
        events = steps.compactMap(\.event)
        if let thaw = events.last(where: { $0.kind == .thaw }) {
            how = .thawed
            thawTime = thaw.duration
            backend = thaw.backend
            tasks = thaw.tasks
        } else if let restore = events.last(where: { $0.kind == .restore && $0.to == .active }) {
            how = .restored
            restoreTime = restore.duration
        } else {
            how = events.contains { $0.kind == .resume } ? .resumedDuringGrace : .alreadyActive
        }
        readyAfter = events.last { $0.kind == .ready }?.duration
    }
}

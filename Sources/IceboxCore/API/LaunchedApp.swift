/// An app ``IceboxClient/launch(_:)-7an0t`` started: its record just after the launch (a
/// snapshot: ask ``IceboxClient/state(of:)-i4f5`` for the current state), and the daemon's lines.
public struct LaunchedApp: Sendable {
    /// The record `icebox ps --json` shows for the app, taken right after the launch.
    public var record: AppRecord
    /// The daemon's lines, as `icebox launch` prints them (`web  launched  pid 41233, …`).
    public var output: CommandOutput

    /// The app's name (unique among the daemon's apps).
    public var name: String { record.name }
    /// The app's main process.
    public var pid: Int32 { record.pid }
    /// The app's cgroup v2 directory (`cgroup.events` in it says `frozen 1` while the app
    /// is suspended), or nil if the host has no usable cgroup v2 root.
    public var cgroup: String? { record.cgroup }

    /// How it counted as ready (``LaunchOptions/ready``: exec, READY=1, a probe).
    public var readyMode: ReadyMode { record.options.ready }
    /// From the launch to ready (the cold start), as the daemon measured it; nil if not known.
    public var readyAfter: Duration?
    /// The event of its becoming ready (`ready`, launching → active), as in the event log.
    public var readyEvent: Event?

    /// A launched app from its record and the daemon's lines.
    public init(record: AppRecord, output: CommandOutput) {
        self.record = record
        self.output = output
        readyAfter = record.coldStart
    }

    /// A launched app from its record, the daemon's lines and its ready event (whose
    /// duration is the launch → ready time).
    init(record: AppRecord, output: CommandOutput, readyEvent: Event?) {
        self.init(record: record, output: output)
        self.readyEvent = readyEvent
        if let took = readyEvent?.durationNanos { readyAfter = .nanoseconds(took) }
    }
}

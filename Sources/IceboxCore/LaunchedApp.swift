/// An app ``IceboxClient/launch(_:)`` started: the daemon's record of it just after the
/// launch, and what the daemon said. The record is a snapshot: ask
/// ``IceboxClient/state(of:)`` or ``IceboxClient/apps(all:)`` for the current state.
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

    /// A launched app from its record and the daemon's lines.
    public init(record: AppRecord, output: CommandOutput) {
        self.record = record
        self.output = output
    }
}

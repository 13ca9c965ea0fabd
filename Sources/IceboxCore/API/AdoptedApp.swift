/// An app ``IceboxClient/adopt(_:)-62exe`` took over: its record just after the move (a
/// snapshot: ask ``IceboxClient/state(of:)-i4f5`` for the current state), and the daemon's line.
public struct AdoptedApp: Sendable {
    /// The record `icebox ps --json` shows for the app, taken right after the adoption.
    public var record: AppRecord
    /// The daemon's line, as `icebox adopt` prints it (`build  adopted  pid 4242, 3 processes moved …`).
    public var output: CommandOutput

    /// The app's name.
    public var name: String { record.name }
    /// Its main process (the pid given, or, for a cgroup, one whose parent is outside it).
    public var pid: Int32 { record.pid }
    /// The app's new cgroup v2 directory (`cgroup.events` in it says `frozen 1` while the app
    /// is suspended), or nil if the host has no usable cgroup v2 root.
    public var cgroup: String? { record.cgroup }
    /// The v2 cgroup its main process was in before (where ``IceboxClient/release(_:)-49msn`` sends
    /// it back); empty on a host without cgroup v2.
    public var origin: String { record.adoptedFrom ?? "" }
    /// How long moving every process of the tree into the app's cgroups took.
    public var moveDuration: Duration { .nanoseconds(Int64(clamping: record.adoptMoveNanos ?? 0)) }

    /// An adopted app from its record and the daemon's lines.
    public init(record: AppRecord, output: CommandOutput) {
        self.record = record
        self.output = output
    }
}

/// What ``IceboxClient/release(_:)-49msn`` handed back: the app's last record while it was
/// supervised, and the daemon's line, which says where its processes went.
public struct ReleasedApp: Sendable {
    /// The app's record just before the release.
    public var record: AppRecord
    /// The daemon's line (`build  released  … moved to cgroup /sys/fs/cgroup/x (where it came from) …`).
    public var output: CommandOutput

    /// The app's name (no longer known to the daemon).
    public var name: String { record.name }
    /// Its main process, still running.
    public var pid: Int32 { record.pid }

    /// A released app from its last record and the daemon's lines.
    public init(record: AppRecord, output: CommandOutput) {
        self.record = record
        self.output = output
    }
}

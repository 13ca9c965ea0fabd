import IceboxSystem

/// Everything known about one app, live or ended: what `ps` shows and the registry keeps.
public struct AppRecord: Codable, Sendable {
    public var name: String
    public var options: LaunchOptions
    public var pid: Int32
    public var startTicks: UInt64 = 0  // /proc/PID/stat start time, to tell a reused pid apart
    public var state: AppState
    public var sinceMonotonicNanos: UInt64
    public var sinceWall: String
    public var launchedWall: String
    public var backend: BackendKind
    public var cgroup: String?  // the app's v2 cgroup, if it has one
    public var freezerV1: String?  // the app's v1 freezer cgroup (cgroup1 backend)
    public var spawnMethod: String = ""
    public var coldStartNanos: UInt64?  // launch → ready
    public var lastFreezeNanos: UInt64?
    public var lastThawNanos: UInt64?
    public var statusText: String?  // STATUS= from the app
    public var exitStatus: Int32?  // the shell's convention: code, or 128+signal
    public var ending: String?  // "exited with status 0", "killed by SIGKILL", ...
    public var memoryBytes: UInt64?  // filled in by ps
    public var killedWhileSuspended = false  // ended by a kill while frozen: its state should be restored
    public var memoryV1: String?  // the app's v1 memory cgroup (hybrid hosts), for its memory figure
    public var memorySource: String?  // where memoryBytes came from: memory.current, memory.usage_in_bytes, smaps_rollup Pss
    public var lastCompaction: String?  // what the last compaction reclaimed
    public var launchStartNanos: UInt64 = 0  // monotonic: when it was launched
    public var graceStartNanos: UInt64?  // monotonic, while in background: the grace under way
    public var graceDeadlineNanos: UInt64?
    public var graceCapNanos: UInt64?
    /// A terminate or eviction under way (monotonic times, as the grace's): a daemon taking
    /// over after a crash finishes it, SIGKILL at `killDeadlineNanos` (an eviction's is its
    /// start: at once), instead of adopting an app told to go as if nothing had begun.
    public var endIntent: AppLifecycle.Ending?
    public var endStartNanos: UInt64?
    public var killDeadlineNanos: UInt64?
    /// Who the app runs as: its --user, else the daemon's own ids (nil in records from before).
    public var runsAs: RunAs?
    /// The app's NOTIFY_SOCKET when it is not the notify directory's (an app run as another
    /// user gets one it can reach; see AppNotifySocket).
    public var notifySocket: String?
    /// When `--watchdog-action restart` launched it again (monotonic ns): the restarts within
    /// its start limit's interval, this launch's last; nil for a launch of its own.
    public var restartTimesNanos: [UInt64]?
    /// Set for an app `icebox adopt` took over (it ran before icebox knew it): the v2 cgroup
    /// its main process was in then ("" on a host without one), where `icebox release` hands
    /// it back. nil for an app icebox launched.
    public var adoptedFrom: String?
    /// The v1 freezer and v1 memory cgroups it was in (hosts with those hierarchies).
    public var adoptedFromFreezerV1: String?
    public var adoptedFromMemoryV1: String?
    /// How long moving its processes into its cgroups took (adopted apps).
    public var adoptMoveNanos: UInt64?

    /// Whether `icebox adopt` took it over: icebox is not its parent (its exit status is not
    /// known), its output is not in `icebox logs`, `relaunch` uses the command line read from
    /// /proc at the adoption.
    public var isAdopted: Bool { adoptedFrom != nil }
}

extension AppRecord {
    /// The record as it may leave the daemon (`ps`, `ps --json`): the environment's variable
    /// names stay, their values do not (a token in the caller's environment, or passed with
    /// --env, must never reach a terminal, a CI log or a bug report).
    public var redacted: AppRecord {
        var r = self
        r.options.environment = r.options.environment.map(Self.nameOnly)
        r.options.extraEnvironment = r.options.extraEnvironment.map(Self.nameOnly)
        return r
    }

    /// The name ends at the first `=` byte, as the kernel and libc read an environment
    /// entry; a search by Character missed an `=` that a combining mark joins to the next
    /// character ("K=\u{338}secret") and showed the value whole. Bytes are faster, too.
    static func nameOnly(_ entry: String) -> String {
        entry.utf8.firstIndex(of: UInt8(ascii: "=")).map { String(Substring(entry.utf8[..<$0])) } ?? entry
    }
}

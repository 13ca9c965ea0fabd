import IceboxSystem

/// Everything known about one app, live or ended: what `ps` shows and the registry keeps.
public struct AppRecord: Codable, Sendable {
    /// The app's name (unique among the apps a daemon knows).
    public var name: String
    /// What it was launched (or adopted) with; the environment's values are removed in
    /// what a client is sent (only the variables' names stay).
    public var options: LaunchOptions
    /// Its main process.
    public var pid: Int32
    package var startTicks: UInt64 = 0  // /proc/PID/stat start time, to tell a reused pid apart
    /// Where it is in the lifecycle.
    public var state: AppState
    package var sinceMonotonicNanos: UInt64
    /// When it entered ``state`` (RFC 3339, UTC).
    public var sinceWall: String
    /// When it was launched or adopted (RFC 3339, UTC).
    public var launchedWall: String
    /// How it is frozen.
    public var backend: BackendKind
    /// Its cgroup v2 directory, if it has one (the kernel's `cgroup.events` there says
    /// `frozen 1` while it is suspended with the cgroup2 backend).
    public var cgroup: String?
    /// Its cgroup v1 freezer directory (the cgroup1 backend), if it has one.
    public var freezerV1: String?
    package var spawnMethod: String = ""
    package var coldStartNanos: UInt64?  // launch → ready
    package var lastFreezeNanos: UInt64?
    package var lastThawNanos: UInt64?
    /// The app's last `STATUS=` (sd_notify), as it sent it.
    public var statusText: String?
    /// How it ended, in the shell's convention: its exit code, or 128 + the signal that
    /// killed it; nil while it runs, and when icebox is not its parent (adopted apps).
    public var exitStatus: Int32?
    /// How it ended, in words ("exited with status 0", "killed by SIGKILL", ...).
    public var ending: String?
    /// Its memory in bytes, as `ps` reads it (nil where it was not read).
    public var memoryBytes: UInt64?
    /// Ended by a kill while frozen (an eviction): its next launch is told
    /// `ICEBOX_LAUNCH_REASON=restore`, to restore its state.
    public var killedWhileSuspended = false
    /// Its cgroup v1 memory directory (hybrid and v1 hosts), where its memory is read.
    public var memoryV1: String?
    package var memorySource: String?  // where memoryBytes came from: memory.current, memory.usage_in_bytes, smaps_rollup Pss
    package var lastCompaction: String?  // what the last compaction reclaimed
    package var launchStartNanos: UInt64 = 0  // monotonic: when it was launched
    package var graceStartNanos: UInt64?  // monotonic, while in background: the grace under way
    package var graceDeadlineNanos: UInt64?
    package var graceCapNanos: UInt64?
    /// A terminate or eviction under way (monotonic times): a daemon taking over after a crash
    /// finishes it, SIGKILL at `killDeadlineNanos` (an eviction's: at once), rather than
    /// adopting an app told to go as if nothing had begun.
    package var endIntent: AppLifecycle.Ending?
    package var endStartNanos: UInt64?
    package var killDeadlineNanos: UInt64?
    /// A checkpoint to disk or a restore under way (its start, monotonic ns), and the criu
    /// doing it (pid and /proc start time): a daemon taking over after a crash waits for that
    /// criu, then finds the app in memory, on disk with complete images, or restored.
    package var diskIntent: DiskIntent?
    package var diskIntentStartNanos: UInt64?
    package var diskWorker: Int32?
    package var diskWorkerStartTicks: UInt64?
    /// Where its checkpoint's images are, while it is on disk (state `on-disk`).
    public var images: String?
    /// The size of those images, in bytes.
    public var imageBytes: UInt64?
    package var lastCheckpointNanos: UInt64?  // how long its last checkpoint's dump took
    package var lastRestoreNanos: UInt64?  // and its last restore
    /// Who the app runs as: its --user, else the daemon's own ids (nil in records from before).
    public var runsAs: RunAs?
    /// The app's NOTIFY_SOCKET when it is not the notify directory's (an app run as another
    /// user gets one it can reach; see AppNotifySocket).
    package var notifySocket: String?
    /// When `--watchdog-action restart` launched it again (monotonic ns): the restarts within
    /// its start limit's interval, this launch's last; nil for a launch of its own.
    package var restartTimesNanos: [UInt64]?
    /// Set for an app `icebox adopt` took over (it ran before icebox knew it): the v2 cgroup
    /// its main process was in then ("" on a host without one), where `icebox release` hands
    /// it back. nil for an app icebox launched.
    public var adoptedFrom: String?
    package var adoptedFromFreezerV1: String?  // the v1 freezer and memory cgroups it was in
    package var adoptedFromMemoryV1: String?
    package var adoptMoveNanos: UInt64?  // moving its processes into its cgroups (adopted apps)

    /// Whether `icebox adopt` took it over: icebox is not its parent (no exit status), its
    /// output is not in `icebox logs`, `relaunch` uses the command line read at the adoption.
    public var isAdopted: Bool { adoptedFrom != nil }
}

extension AppRecord {
    /// No checkpoint or restore under way any more: its intent and its criu forgotten.
    package mutating func clearDiskWork() {
        diskIntent = nil
        diskIntentStartNanos = nil
        diskWorker = nil
        diskWorkerStartTicks = nil
    }

    /// The record as it may leave the daemon (`ps`, `ps --json`): the environment's names stay,
    /// their values do not (a token must never reach a terminal, a CI log or a bug report).
    package var redacted: AppRecord {
        var r = self
        r.options.environment = r.options.environment.map(Self.nameOnly)
        r.options.extraEnvironment = r.options.extraEnvironment.map(Self.nameOnly)
        return r
    }

    /// The name ends at the first `=` byte, as the kernel and libc read an entry: a search by
    /// Character misses an `=` a combining mark joins to the next one ("K=\u{338}secret").
    static func nameOnly(_ entry: String) -> String {
        entry.utf8.firstIndex(of: UInt8(ascii: "=")).map { String(Substring(entry.utf8[..<$0])) } ?? entry
    }
}

extension AppRecord: JSONRecord {
    /// Encodes the fields `visitFields` lists, under their Swift names (as synthesized).
    public func encode(to encoder: any Encoder) throws { try encodeFields(to: encoder) }

    /// Decodes the fields `visitFields` lists, under their Swift names; a missing required one
    /// throws `DecodingError.keyNotFound`.
    public init(from decoder: any Decoder) throws { try self.init(fieldsFrom: decoder) }

    /// The group of the two members a record keeps from launch to end (its launch options,
    /// most of its bytes, and the identity it runs as), which `Registry` writes apart, at the
    /// end of the file; the others, which its lifecycle changes, are group 0.
    package static let launchTime = 1

    /// Every member, in key order: the registry's form, `ps --json`'s and Codable's.
    package func visitFields<V: JSONFieldVisitor>(_ v: inout V) where V.Root == AppRecord {
        v.optional("adopt_move_ns", adoptMoveNanos) { $0.adoptMoveNanos = $1 }
        v.optional("adopted_from", adoptedFrom) { $0.adoptedFrom = $1 }
        v.optional("adopted_from_freezer_v1", adoptedFromFreezerV1) { $0.adoptedFromFreezerV1 = $1 }
        v.optional("adopted_from_memory_v1", adoptedFromMemoryV1) { $0.adoptedFromMemoryV1 = $1 }
        v.required("backend", backend) { $0.backend = $1 }
        v.optional("cgroup", cgroup) { $0.cgroup = $1 }
        v.optional("cold_start_ns", coldStartNanos) { $0.coldStartNanos = $1 }
        v.optional("disk_intent", diskIntent) { $0.diskIntent = $1 }
        v.optional("disk_intent_start_ns", diskIntentStartNanos) { $0.diskIntentStartNanos = $1 }
        v.optional("disk_worker", diskWorker) { $0.diskWorker = $1 }
        v.optional("disk_worker_start_ticks", diskWorkerStartTicks) { $0.diskWorkerStartTicks = $1 }
        v.optional("end_intent", endIntent) { $0.endIntent = $1 }
        v.optional("end_start_ns", endStartNanos) { $0.endStartNanos = $1 }
        v.optional("ending", ending) { $0.ending = $1 }
        v.optional("exit_status", exitStatus) { $0.exitStatus = $1 }
        v.optional("freezer_v1", freezerV1) { $0.freezerV1 = $1 }
        v.optional("grace_cap_ns", graceCapNanos) { $0.graceCapNanos = $1 }
        v.optional("grace_deadline_ns", graceDeadlineNanos) { $0.graceDeadlineNanos = $1 }
        v.optional("grace_start_ns", graceStartNanos) { $0.graceStartNanos = $1 }
        v.optional("image_bytes", imageBytes) { $0.imageBytes = $1 }
        v.optional("images", images) { $0.images = $1 }
        v.optional("kill_deadline_ns", killDeadlineNanos) { $0.killDeadlineNanos = $1 }
        v.required("killed_while_suspended", killedWhileSuspended) { $0.killedWhileSuspended = $1 }
        v.optional("last_checkpoint_ns", lastCheckpointNanos) { $0.lastCheckpointNanos = $1 }
        v.optional("last_compaction", lastCompaction) { $0.lastCompaction = $1 }
        v.optional("last_freeze_ns", lastFreezeNanos) { $0.lastFreezeNanos = $1 }
        v.optional("last_restore_ns", lastRestoreNanos) { $0.lastRestoreNanos = $1 }
        v.optional("last_thaw_ns", lastThawNanos) { $0.lastThawNanos = $1 }
        v.required("launch_start_ns", launchStartNanos) { $0.launchStartNanos = $1 }
        v.required("launched_wall", launchedWall) { $0.launchedWall = $1 }
        v.optional("memory_bytes", memoryBytes) { $0.memoryBytes = $1 }
        v.optional("memory_source", memorySource) { $0.memorySource = $1 }
        v.optional("memory_v1", memoryV1) { $0.memoryV1 = $1 }
        v.required("name", name) { $0.name = $1 }
        v.optional("notify_socket", notifySocket) { $0.notifySocket = $1 }
        v.required("options", options, group: Self.launchTime) { $0.options = $1 }
        v.required("pid", pid) { $0.pid = $1 }
        v.optional("restart_times_ns", restartTimesNanos) { $0.restartTimesNanos = $1 }
        v.optional("runs_as", runsAs, group: Self.launchTime) { $0.runsAs = $1 }
        v.required("since_monotonic_ns", sinceMonotonicNanos) { $0.sinceMonotonicNanos = $1 }
        v.required("since_wall", sinceWall) { $0.sinceWall = $1 }
        v.required("spawn_method", spawnMethod) { $0.spawnMethod = $1 }
        v.required("start_ticks", startTicks) { $0.startTicks = $1 }
        v.required("state", state) { $0.state = $1 }
        v.optional("status_text", statusText) { $0.statusText = $1 }
    }

    package static let jsonBlank = AppRecord(
        name: "", options: LaunchOptions(name: "", command: []), pid: 0, state: .active, sinceMonotonicNanos: 0,
        sinceWall: "", launchedWall: "", backend: .signal)
}

import Glibc
import IceboxSystem

/// An app the daemon supervises right now: its lifecycle (the state machine, which decides)
/// and the live resources the daemon acts with (pidfd, cgroups, freezer, notify socket,
/// readiness probe), the kernel operation in flight, and the policy's timers. Touched only
/// by the daemon's loop thread.
final class LiveApp {
    /// The state machine: every transition goes through `Daemon.apply(_:to:)`.
    var lifecycle: AppLifecycle { didSet { deadlineMayHaveChanged() } }
    let handle: ProcessHandle
    /// The one owner of the app's cgroups (empty on a host without any).
    let cgroups: AppCgroups
    let freezer: any Freezer
    /// Where its sd_notify datagrams arrive (chosen at launch, kept for its life).
    let notify: NotifyChannel
    /// Its main process's /proc/PID/stat, kept open for the background notice's look at
    /// the signals it catches (`--background-signal auto`); the descriptor stays that process.
    /// For a `--pid-namespace` app, the app's, not its init's (which forwards every signal
    /// icebox sends and catches none itself): the init's only child, found on first use
    /// (not kept while the init has not forked it yet).
    var statFile: CgroupFile {
        if let keptStatFile { return keptStatFile }
        guard let target = record.options.pidNamespace ? ProcFS.children(of: pid).first : pid else {
            return CgroupFile(path: "/proc/\(pid)/stat", writable: false)
        }
        let file = CgroupFile(path: "/proc/\(target)/stat", writable: false)
        keptStatFile = file
        return file
    }
    private var keptStatFile: CgroupFile?
    /// The control connection of `icebox run`, which gets this app's events and its exit.
    var attachedClient: Int32?
    var spawnEvent: Event?
    /// The spawn stand-in that cloned it is still in its v1 cgroups (it was let go at the
    /// exec and is exiting): what would make the app ready (`.ready`, and any `.notify`,
    /// kept in order) waits here, so it is not counted active, frozen or reported launched
    /// with the stand-in among its processes; nil: nothing held (Daemon+StandIns).
    var heldForStandIn: [LifecycleInput]?

    // The readiness probe and when its next attempt is due (or, while an attempt is in
    // flight, when that attempt is abandoned).
    var probe: ReadinessProbe?
    var probeAt: UInt64? { didSet { deadlineMayHaveChanged() } }

    /// A freeze or thaw the kernel is working on (FreezeInFlight); nil: none.
    var freeze: FreezeInFlight? { didSet { deadlineMayHaveChanged() } }
    /// The app's cgroups being removed (after its main process ended); nil: not.
    var removal: CgroupRemoval? { didSet { deadlineMayHaveChanged() } }
    /// How many processes the last freeze confirmed (nil: none yet): a thaw that wakes one
    /// single-threaded process runs without the thaw guard (`Daemon.wakesSeveral`).
    var frozenProcesses: Int?
    /// The cgroup.events descriptor registered with epoll (EPOLLPRI) while the daemon keeps
    /// the app's files open: an operation or a removal waits on it, a change to a suspended
    /// app may mean its main process was moved out, and every change is timed
    /// (`eventsChangedAt`); owned by `cgroups`, never closed here.
    var watchedEvents: Int32?
    /// When cgroup.events last changed, as far as the daemon can tell (monotonic ns): a
    /// notification taken, an operation of its own confirmed, or the watch begun (what came
    /// before it went unseen). nil: not known. A freeze started well after it can wait on
    /// the kernel's notification instead of re-reading (`FreezeOperation.expectPromptNotification`).
    var eventsChangedAt: UInt64?

    /// A checkpoint to disk being carried out (criu's dump, then the sync of its images).
    var checkpoint: CheckpointWork? { didSet { deadlineMayHaveChanged() } }

    // The policy's timers for a frozen app (monotonic ns; nil when not armed).
    var compactAt: UInt64? { didSet { deadlineMayHaveChanged() } }
    var lockCheckAt: UInt64? { didSet { deadlineMayHaveChanged() } }

    /// Datagrams on its own notify socket from processes outside the app.
    var notifyDrops = NotifyDrops() { didSet { deadlineMayHaveChanged() } }

    /// The daemon's schedule of app deadlines, told whenever one of the properties
    /// `nextDeadline` is made of is set; nil before the app is added and after it ended.
    weak var deadlines: AppDeadlines?
    /// Already waiting in `deadlines` to be looked at again.
    var deadlineTouched = false

    private func deadlineMayHaveChanged() { deadlines?.touch(self) }

    init(lifecycle: AppLifecycle, handle: ProcessHandle, cgroups: AppCgroups, notify: NotifyChannel) {
        self.lifecycle = lifecycle
        self.handle = handle
        self.cgroups = cgroups
        self.notify = notify
        let pid = handle.pid
        freezer = cgroups.freezer(backend: lifecycle.record.backend) { ProcFS.pids(inSession: pid) }
    }

    var name: String { lifecycle.name }
    var record: AppRecord { lifecycle.record }
    var pid: pid_t { handle.pid }

    /// Whether the process has exited (its pidfd reads as ready), child or not.
    func hasExited() -> Bool { Poll.ready(handle.pidfd, Int16(POLLIN)) }

    /// Every process of the app: its cgroups' (sub-cgroups included) where it has them, else
    /// its session (the app is a session leader; a process that called setsid() itself
    /// escapes this fallback).
    func members() -> [pid_t] {
        cgroups.members() ?? ProcFS.pids(inSession: pid)
    }

    /// Whether a notify sender belongs to this app: in its cgroup (or a sub-cgroup of it), or
    /// in its session.
    func owns(senderPID: pid_t, unifiedMount: CgroupMount?) -> Bool {
        if let path = cgroups.v2Path, let unifiedMount {
            guard let sender = CgroupMembership.path(of: senderPID, mount: unifiedMount) else { return false }
            return CgroupMembership.isWithin(sender, path)
        }
        return ProcFS.stat(pid: senderPID)?.session == pid
    }

    /// The app's memory, from the best source this host has (memory.current, the v1
    /// memory cgroup, or the sum of Pss).
    /// `keepOpen`: the counter's descriptor may be opened and kept (`AppCgroups.memoryReading`).
    func memory(roots: [DirectoryHandle], keepOpen: Bool) -> AppMemoryReading {
        // An adopted app's pages stay charged to the cgroup it came from (neither v1 nor v2
        // moves charges with a task): its cgroup counter holds only what it allocated since,
        // so its Pss is the figure the policy can weigh.
        if record.isAdopted { return AppMemoryReading(bytes: AppMemory.pssSum(pids: members()), source: .pssSum) }
        if let reading = cgroups.memoryReading(keepOpen: keepOpen) { return reading }
        return AppMemory.read(v2Cgroup: cgroups.v2Path, v1MemoryCgroup: cgroups.memoryV1Path, pids: members(), roots: roots)
    }
}

extension LifecycleInput {
    /// What may make a launching app ready, held while its stand-in leaves (`LiveApp.heldForStandIn`).
    var waitsForStandIn: Bool {
        switch self {
        case .ready, .notify: return true
        default: return false
        }
    }
}

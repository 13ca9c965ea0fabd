import Glibc
import IceboxSystem

/// An app the daemon supervises right now: its lifecycle (which decides), the live resources
/// the daemon acts with, and its timers. Touched only by the daemon's loop thread.
final class LiveApp {
    var lifecycle: AppLifecycle { didSet { deadlineMayHaveChanged() } }  // changed by `Daemon.apply(_:to:)`
    let handle: ProcessHandle
    let cgroups: AppCgroups  // the one owner of the app's cgroups (empty on a host without any)
    let freezer: any Freezer
    let notify: NotifyChannel  // chosen at launch, kept for its life
    /// Its main process's /proc/PID/stat, kept open for `--background-signal auto`'s look at
    /// the signals it catches. For a `--pid-namespace` app, the app's, not its init's (which
    /// forwards every signal and catches none): the init's only child, once it has forked.
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
    var attachedClient: Int32?  // `icebox run`'s connection: this app's events and its exit
    var spawnEvent: Event?
    /// While the stand-in that cloned it is still in its v1 cgroups, what would make the app
    /// ready (`.ready`, `.notify`, in order) waits here; nil: nothing held (Daemon+StandIns).
    var heldForStandIn: [LifecycleInput]?

    // The readiness probe and when its next attempt is due (or the one in flight abandoned).
    var probe: ReadinessProbe?
    var probeAt: UInt64? { didSet { deadlineMayHaveChanged() } }

    var freeze: FreezeInFlight? { didSet { deadlineMayHaveChanged() } }
    var removal: CgroupRemoval? { didSet { deadlineMayHaveChanged() } }  // after its main process ended
    /// How many processes the last freeze confirmed (nil: none yet; `Daemon.wakesSeveral`).
    var frozenProcesses: Int?
    /// The cgroup.events descriptor registered with epoll (EPOLLPRI) while the daemon keeps
    /// the app's files open; owned by `cgroups`, never closed here.
    var watchedEvents: Int32?
    /// When cgroup.events last changed, as far as the daemon knows (nil: not known): a freeze
    /// well after it can wait on the kernel's notification (`expectPromptNotification`).
    var eventsChangedAt: UInt64?

    var checkpoint: CheckpointWork? { didSet { deadlineMayHaveChanged() } }

    // The policy's timers for a frozen app (monotonic ns; nil when not armed).
    var compactAt: UInt64? { didSet { deadlineMayHaveChanged() } }
    var lockCheckAt: UInt64? { didSet { deadlineMayHaveChanged() } }

    /// Datagrams on its own notify socket from processes outside the app.
    var notifyDrops = NotifyDrops() { didSet { deadlineMayHaveChanged() } }

    /// The schedule, told whenever a property `nextDeadline` is made of is set; nil off it.
    weak var deadlines: AppDeadlines?
    var deadlineTouched = false  // already waiting in `deadlines` to be looked at again

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

    /// Every process of the app: its cgroups' (sub-cgroups included), else its session's (a
    /// process that called setsid() itself escapes this fallback).
    func members() -> [pid_t] {
        cgroups.members() ?? ProcFS.pids(inSession: pid)
    }

    /// Whether a notify sender belongs to this app: in its cgroup (or a sub-cgroup), or session.
    func owns(senderPID: pid_t, unifiedMount: CgroupMount?) -> Bool {
        if let path = cgroups.v2Path, let unifiedMount {
            guard let sender = CgroupMembership.path(of: senderPID, mount: unifiedMount) else { return false }
            return CgroupMembership.isWithin(sender, path)
        }
        return ProcFS.stat(pid: senderPID)?.session == pid
    }

    /// The app's memory, from the best source this host has; `keepOpen`: its counter may stay open.
    func memory(roots: [DirectoryHandle], keepOpen: Bool) -> AppMemoryReading {
        // An adopted app's pages stay charged to the cgroup it came from (no charge moves with
        // a task): its Pss is the figure the policy can weigh.
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

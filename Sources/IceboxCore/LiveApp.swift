import CIceboxShim
import Glibc
import IceboxSystem

/// An app the daemon supervises right now: its record plus the live resources (pidfd,
/// cgroups, notify socket) and the deadlines the event loop watches. Touched only by the
/// daemon's loop thread.
final class LiveApp {
    var record: AppRecord
    let handle: ProcessHandle
    let cgroup: Cgroup2?
    let freezerV1: Cgroup1Freezer?
    let freezer: any Freezer
    /// The per-app v1 memory cgroup on hybrid hosts (how its memory is measured there).
    var memoryV1: MemoryCgroupV1?
    let notifyFD: Int32
    let notifyPath: String
    /// The control connection of `icebox run`, which gets this app's events and its exit.
    var attachedClient: Int32?

    // Deadlines (monotonic ns) the loop wakes up for; nil when not armed.
    var readyDeadline: UInt64?
    /// The next probe attempt; while one is in flight, that attempt's deadline.
    var probeAt: UInt64?
    var graceDeadline: UInt64?
    var killDeadline: UInt64?

    var launchStart: UInt64 = 0
    var graceStart: UInt64 = 0
    var graceCap: UInt64 = 0
    var graceExtensions = 0
    var terminating = false
    var evicting = false
    var endStart: UInt64 = 0
    var probe: ReadinessProbe?
    var spawnEvent: Event?
    /// Re-adopted after a daemon restart: not our child, so its exit status cannot be read.
    var adopted = false
    /// When the last thaw completed, until the app says READY=1 again (resume → ready).
    var resumedAt: UInt64?

    // Clients waiting for this app to reach a state.
    var launchWaiters: [Int] = []
    var suspendWaiters: [Int] = []
    var endWaiters: [Int] = []
    var resumeWaiters: [Int] = []  // resume --wait-ready: until READY=1 after the thaw
    var resumeReadyDeadline: UInt64?
    /// Chosen as the policy's victim while not yet suspended: evict once frozen.
    var pendingEviction = false
    var compactAt: UInt64?  // compaction due (after a freeze)
    var lockCheckAt: UInt64?  // the file-lock check due (1 s after a freeze, as Android does)
    var compactedWhileSuspended = false  // the next resume is the first after a compaction

    init(
        record: AppRecord, handle: ProcessHandle, cgroup: Cgroup2?, freezerV1: Cgroup1Freezer?,
        notifyFD: Int32, notifyPath: String
    ) {
        self.record = record
        self.handle = handle
        self.cgroup = cgroup
        self.freezerV1 = freezerV1
        self.notifyFD = notifyFD
        self.notifyPath = notifyPath
        let pid = handle.pid
        switch record.backend {
        case .cgroup2: freezer = Cgroup2Freezer(cgroup: cgroup!)
        case .cgroup1: freezer = freezerV1!
        case .signal:
            if let cgroup {
                freezer = SignalFreezer { cgroup.procs() }
            } else {
                freezer = SignalFreezer { ProcFS.pids(inSession: pid) }
            }
        }
    }

    var name: String { record.name }

    /// Whether the process has exited (its pidfd reads as ready), child or not.
    func hasExited() -> Bool { icebox_poll_ns(handle.pidfd, Int16(POLLIN), 0) > 0 }
    var pid: pid_t { handle.pid }

    /// Every process of the app: its v2 cgroup where it has one, else its session (the app
    /// is a session leader; a process that called setsid() itself escapes this fallback).
    func members() -> [pid_t] {
        if let cgroup { return cgroup.procs() }
        return ProcFS.pids(inSession: pid)
    }

    /// Whether a notify sender belongs to this app: in its cgroup, or in its session.
    func owns(senderPID: pid_t, unifiedMount: String?) -> Bool {
        if let cgroup, let unifiedMount {
            guard let text = try? FileIO.read("/proc/\(senderPID)/cgroup"),
                let relative = ProcFS.unifiedCgroup(in: text)
            else { return false }
            let full = relative == "/" ? unifiedMount : unifiedMount + relative
            return full == cgroup.path
        }
        return ProcFS.stat(pid: senderPID)?.session == pid
    }

    /// The app's memory, from the best source this host has (memory.current, the v1
    /// memory cgroup, or the sum of Pss).
    func memory() -> AppMemoryReading {
        AppMemory.read(v2Cgroup: cgroup?.path, v1MemoryCgroup: memoryV1?.path, pids: members())
    }

    func setState(_ state: AppState, now: UInt64 = Clock.monotonicNanos()) {
        record.state = state
        record.sinceMonotonicNanos = now
        record.sinceWall = Clock.rfc3339(wallNanos: Clock.wallNanos())
    }

    /// The record with the deadlines under way, so a daemon that takes over after a crash
    /// can finish them (monotonic times survive a daemon restart: the clock is the kernel's).
    var persistentRecord: AppRecord {
        var r = record
        r.launchStartNanos = launchStart
        r.graceStartNanos = record.state == .background ? graceStart : nil
        r.graceDeadlineNanos = record.state == .background ? graceDeadline : nil
        r.graceCapNanos = record.state == .background ? graceCap : nil
        return r
    }

    /// The earliest deadline this app has armed.
    var nextDeadline: UInt64? {
        [readyDeadline, probeAt, graceDeadline, killDeadline, resumeReadyDeadline, compactAt, lockCheckAt].compactMap { $0 }.min()
    }
}

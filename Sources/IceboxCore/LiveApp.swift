import Glibc
import IceboxSystem

/// An app the daemon supervises right now: its lifecycle (the state machine, which decides)
/// and the live resources the daemon acts with (pidfd, cgroups, freezer, notify socket,
/// readiness probe) plus the policy's timers. Touched only by the daemon's loop thread.
final class LiveApp {
    /// The state machine: every transition goes through `Daemon.apply(_:to:)`.
    var lifecycle: AppLifecycle
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
    var spawnEvent: Event?

    // The readiness probe and when its next attempt is due (or, while an attempt is in
    // flight, when that attempt is abandoned).
    var probe: ReadinessProbe?
    var probeAt: UInt64?
    // The policy's timers for a frozen app (monotonic ns; nil when not armed).
    var compactAt: UInt64?
    var lockCheckAt: UInt64?

    init(
        lifecycle: AppLifecycle, handle: ProcessHandle, cgroup: Cgroup2?, freezerV1: Cgroup1Freezer?,
        notifyFD: Int32, notifyPath: String
    ) {
        self.lifecycle = lifecycle
        self.handle = handle
        self.cgroup = cgroup
        self.freezerV1 = freezerV1
        self.notifyFD = notifyFD
        self.notifyPath = notifyPath
        let pid = handle.pid
        switch lifecycle.record.backend {
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

    var name: String { lifecycle.name }
    var record: AppRecord { lifecycle.record }
    var pid: pid_t { handle.pid }

    /// Whether the process has exited (its pidfd reads as ready), child or not.
    func hasExited() -> Bool { Poll.ready(handle.pidfd, Int16(POLLIN)) }

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

    /// The earliest moment the loop must wake up for this app.
    var nextDeadline: UInt64? {
        [lifecycle.nextDeadline, probeAt, compactAt, lockCheckAt].compactMap { $0 }.min()
    }
}

import Glibc
import IceboxSystem

/// Freezing with SIGSTOP, for hosts without a usable freezer cgroup. Every process of the
/// app gets SIGSTOP, and the freeze is confirmed when every thread reads state `T` in
/// /proc. There is no event for that, so the read-back is a deliberate back-off (20 µs
/// growing to 5 ms); processes that appear meanwhile are stopped too.
///
/// What it cannot do: a process that left the app's process group and has no cgroup to
/// find it by escapes; a parent or a tracer sees the stop (waitpid WUNTRACED, SIGCHLD),
/// and a program that handles SIGCONT notices the resume.
public struct SignalFreezer: Freezer {
    /// Lists the app's processes now (its cgroup's procs, its session, or a process tree).
    public let members: @Sendable () -> [pid_t]
    public var kind: BackendKind { .signal }

    public init(members: @escaping @Sendable () -> [pid_t]) { self.members = members }

    static func stoppedState(_ c: Character) -> Bool { c == "T" || c == "t" }

    public func freeze(deadline: UInt64) throws(FreezeFailure) -> FreezeReport {
        let start = Clock.monotonicNanos()
        var signaled = Set<pid_t>()
        // A process whose every thread was seen stopped stays that way (a stopped thread cannot
        // start another), so it is not read again: each pass costs only what is left to confirm.
        var done: [pid_t: Int] = [:]  // pid → its thread count
        var interval: UInt64 = 20_000
        while true {
            let pids = members()
            if pids.isEmpty { throw .gone("no processes left to stop") }
            for pid in pids where !signaled.contains(pid) {
                if kill(pid, SIGSTOP) == 0 { signaled.insert(pid) }
            }
            var allStopped = true
            for pid in pids where done[pid] == nil {
                var threads = 0
                var stopped = true
                for tid in ProcFS.threads(of: pid) {
                    guard let st = ProcFS.threadStat(pid: pid, tid: tid) else { continue }
                    if st.state == "Z" || st.state == "X" { continue }
                    threads += 1
                    if !Self.stoppedState(st.state) {
                        stopped = false
                        break
                    }
                }
                if stopped { done[pid] = threads } else { allStopped = false }
            }
            let now = Clock.monotonicNanos()
            if allStopped {
                let tasks = pids.reduce(0) { $0 + (done[$1] ?? 0) }
                return FreezeReport(backend: .signal, durationNanos: now - start, tasks: tasks)
            }
            if now >= deadline {
                let stuck = StuckTask.describe(pids: pids, skippingStopped: true)
                for pid in pids { kill(pid, SIGCONT) }
                throw .timeout(FreezeTimeout(backend: .signal, waitedNanos: now - start, stuck: stuck))
            }
            var ts = timespec(tv_sec: 0, tv_nsec: Int(min(interval, deadline - now)))
            nanosleep(&ts, nil)
            interval = min(interval * 2, 5_000_000)
        }
    }

    public func thaw(deadline: UInt64) throws(FreezeFailure) -> FreezeReport {
        let start = Clock.monotonicNanos()
        var running: [pid_t: Int] = [:]  // pids confirmed running → their thread count
        var interval: UInt64 = 20_000
        while true {
            let pids = members()
            var anyStopped = false
            for pid in pids where running[pid] == nil {
                kill(pid, SIGCONT)
                var threads = 0
                var stopped = false
                for tid in ProcFS.threads(of: pid) {
                    guard let st = ProcFS.threadStat(pid: pid, tid: tid) else { continue }
                    threads += 1
                    if Self.stoppedState(st.state) {
                        stopped = true
                        break
                    }
                }
                if stopped { anyStopped = true } else { running[pid] = threads }
            }
            let now = Clock.monotonicNanos()
            if !anyStopped {
                return FreezeReport(backend: .signal, durationNanos: now - start, tasks: pids.reduce(0) { $0 + (running[$1] ?? 0) })
            }
            if now >= deadline { throw .timeout(FreezeTimeout(backend: .signal, waitedNanos: now - start, stuck: [])) }
            var ts = timespec(tv_sec: 0, tv_nsec: Int(min(interval, deadline - now)))
            nanosleep(&ts, nil)
            interval = min(interval * 2, 5_000_000)
        }
    }

    public func isFrozen() -> Bool {
        let pids = members()
        return !pids.isEmpty
            && pids.allSatisfy { pid in
                ProcFS.threads(of: pid).allSatisfy { Self.stoppedState(ProcFS.threadStat(pid: pid, tid: $0)?.state ?? "T") }
            }
    }

    /// Any process stopped: a SIGSTOP round was under way.
    public func freezeStarted() -> Bool {
        members().contains { pid in Self.stoppedState(ProcFS.stat(pid: pid)?.state ?? " ") }
    }

    /// A process and all its descendants (for `icebox freeze --pid`), found through ppid links.
    public static func processTree(root: pid_t) -> [pid_t] {
        let all = ((try? FileIO.list("/proc")) ?? []).compactMap { pid_t($0) }
        var children: [pid_t: [pid_t]] = [:]
        for pid in all { if let st = ProcFS.stat(pid: pid) { children[st.ppid, default: []].append(pid) } }
        var out: [pid_t] = []
        var queue = [root]
        while let p = queue.popLast() {
            guard FileIO.exists("/proc/\(p)") else { continue }
            out.append(p)
            queue.append(contentsOf: children[p] ?? [])
        }
        return out
    }
}

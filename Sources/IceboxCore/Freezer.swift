import Glibc
import IceboxSystem

/// The three ways icebox can freeze an app.
public enum BackendKind: String, Codable, Sendable, CaseIterable {
    case cgroup2, cgroup1, signal
}

/// What a freeze or thaw did and how long the kernel took to confirm it.
public struct FreezeReport: Sendable {
    public var backend: BackendKind
    public var durationNanos: UInt64  // write → confirmed
    public var tasks: Int  // threads that were confirmed
}

/// A task that did not freeze in time, with what it was doing (D-state I/O is the usual cause).
public struct StuckTask: Sendable, CustomStringConvertible {
    public var pid: pid_t
    public var tid: pid_t
    public var state: Character
    public var wchan: String

    public var description: String {
        let location = wchan.isEmpty || wchan == "0" ? "" : " in \(wchan)"
        return "pid \(pid) tid \(tid) state \(state)\(location)"
    }

    static func describe(pids: [pid_t], skippingStopped: Bool) -> [StuckTask] {
        var out: [StuckTask] = []
        for pid in pids {
            for tid in ProcFS.threads(of: pid) {
                guard let st = ProcFS.threadStat(pid: pid, tid: tid) else { continue }
                if skippingStopped && (st.state == "T" || st.state == "t") { continue }
                let wchan = (try? FileIO.read("/proc/\(pid)/task/\(tid)/wchan")) ?? ""
                out.append(StuckTask(pid: pid, tid: tid, state: st.state, wchan: wchan.trimmed()))
            }
        }
        return out
    }
}

/// A freeze that did not complete by its deadline. It has been rolled back: the app runs.
public struct FreezeTimeout: Error, CustomStringConvertible, Sendable {
    public var backend: BackendKind
    public var waitedNanos: UInt64
    public var stuck: [StuckTask]

    public var description: String {
        let list = stuck.prefix(8).map(\.description).joined(separator: "; ")
        return "not frozen after \(DurationText.format(waitedNanos)) (\(backend.rawValue)); rolled back, the app runs"
            + (list.isEmpty ? "" : "; tasks not frozen: \(list)")
    }
}

public enum FreezeFailure: Error, CustomStringConvertible, Sendable {
    case timeout(FreezeTimeout)
    case system(SystemError)
    case gone(String)

    public var description: String {
        switch self {
        case .timeout(let t): return t.description
        case .system(let e): return e.description
        case .gone(let what): return what
        }
    }
}

/// A way to freeze and thaw one set of processes, confirming each before returning.
public protocol Freezer: Sendable {
    var kind: BackendKind { get }
    /// Freezes and waits for the kernel to confirm, up to the deadline (monotonic ns).
    /// On time-out the freeze is rolled back before throwing: never left half-frozen.
    func freeze(deadline: UInt64) throws(FreezeFailure) -> FreezeReport
    func thaw(deadline: UInt64) throws(FreezeFailure) -> FreezeReport
    /// Whether the processes are frozen now (read from the kernel, not remembered).
    func isFrozen() -> Bool
    /// Whether a freeze was asked for and has not been undone, confirmed or not (for a
    /// daemon that takes over after a crash in the middle of one).
    func freezeStarted() -> Bool
}

/// Runs a system step inside a freeze or thaw, reporting its failure as a FreezeFailure.
func step<T>(_ body: () throws(SystemError) -> T) throws(FreezeFailure) -> T {
    do { return try body() } catch { throw .system(error) }
}

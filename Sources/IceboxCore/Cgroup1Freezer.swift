import Glibc
import IceboxSystem

/// Freezing through the cgroup v1 freezer: write FROZEN to `freezer.state` and read it back
/// until it says FROZEN. v1 has no change notification, so the read-back is a deliberate
/// back-off (20 µs growing to 10 ms). A cgroup can stay in FREEZING while new tasks keep
/// appearing; the kernel documentation's remedy is to thaw and retry, which this does once
/// every 100 ms. A freeze that misses its deadline is thawed back.
public struct Cgroup1Freezer: Freezer {
    public let path: String
    public var kind: BackendKind { .cgroup1 }

    private static let stateFile = "freezer.state"

    public init(path: String) { self.path = path }

    var stateFile: String { path + "/" + Self.stateFile }

    public func create() throws(SystemError) {
        if mkdir(path, 0o755) < 0 && errno != EEXIST { throw SystemError("create v1 freezer cgroup", path: path) }
    }

    public func remove() throws(SystemError) {
        if rmdir(path) < 0 && errno != ENOENT { throw SystemError("remove v1 freezer cgroup", path: path) }
    }

    public func addProcess(_ pid: pid_t) throws(SystemError) {
        try FileIO.write(path + "/cgroup.procs", String(pid))
    }

    public func procs() -> [pid_t] {
        ((try? FileIO.read(path + "/cgroup.procs")) ?? "").split(separator: "\n").compactMap { pid_t($0) }
    }

    public func state() throws(SystemError) -> String { try FileIO.read(stateFile).trimmed() }

    public func freeze(deadline: UInt64) throws(FreezeFailure) -> FreezeReport {
        let start = Clock.monotonicNanos()
        var interval: UInt64 = 20_000
        var lastRetry = start
        var timedOut: FreezeTimeout?
        do {
            try FileIO.write(stateFile, "FROZEN")
            while true {
                if try state() == "FROZEN" { break }
                let now = Clock.monotonicNanos()
                if now >= deadline {
                    let stuck = StuckTask.describe(pids: procs(), skippingStopped: false)
                    timedOut = FreezeTimeout(backend: .cgroup1, waitedNanos: now - start, stuck: stuck)
                    try FileIO.write(stateFile, "THAWED")
                    break
                }
                if now - lastRetry > 100_000_000 {
                    // Stuck in FREEZING: thaw and try again, as the v1 freezer documentation advises.
                    try FileIO.write(stateFile, "THAWED")
                    try FileIO.write(stateFile, "FROZEN")
                    lastRetry = now
                }
                var ts = timespec(tv_sec: 0, tv_nsec: Int(min(interval, deadline - now)))
                nanosleep(&ts, nil)
                interval = min(interval * 2, 10_000_000)
            }
        } catch {
            try? FileIO.write(stateFile, "THAWED")
            throw .system(error)
        }
        if let timedOut { throw .timeout(timedOut) }
        return FreezeReport(backend: .cgroup1, durationNanos: Clock.monotonicNanos() - start, tasks: procs().count)
    }

    public func thaw(deadline: UInt64) throws(FreezeFailure) -> FreezeReport {
        let start = Clock.monotonicNanos()
        // THAWED takes effect within the write: the state reads THAWED at once.
        try step { () throws(SystemError) in try FileIO.write(stateFile, "THAWED") }
        let state = try step { () throws(SystemError) in try self.state() }
        let took = Clock.monotonicNanos() - start
        if state != "THAWED" { throw .timeout(FreezeTimeout(backend: .cgroup1, waitedNanos: took, stuck: [])) }
        return FreezeReport(backend: .cgroup1, durationNanos: took, tasks: procs().count)
    }

    public func isFrozen() -> Bool { (try? state()) == "FROZEN" }
    public func freezeStarted() -> Bool { ((try? state()) ?? "THAWED") != "THAWED" }
}

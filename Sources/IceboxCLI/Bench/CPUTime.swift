import IceboxCore
import IceboxSystem

/// CPU time, user and system, in nanoseconds: what `icebox bench` reports as hyperfine's
/// `user` and `system`.
struct CPUTime: Equatable, Sendable {
    var user: UInt64
    var system: UInt64

    /// The user_usec and system_usec lines of a cgroup v2 `cpu.stat` (there in every v2
    /// cgroup, with or without the cpu controller); nil if either is missing.
    static func parseCgroupStat(_ text: String) -> CPUTime? {
        var user: UInt64?
        var system: UInt64?
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 2, let micros = UInt64(fields[1]) else { continue }
            if fields[0] == "user_usec" { user = micros * 1_000 }
            if fields[0] == "system_usec" { system = micros * 1_000 }
        }
        guard let user, let system else { return nil }
        return CPUTime(user: user, system: system)
    }

    /// What every process of the cgroup has used so far (the ended ones included).
    static func ofCgroup(_ path: String) -> CPUTime? {
        (try? FileIO.read(path + "/cpu.stat")).flatMap(parseCgroupStat)
    }

    /// The time used since `earlier` (0 if a counter went backwards: a new cgroup).
    func since(_ earlier: CPUTime) -> CPUTime {
        CPUTime(user: user.saturatingSub(earlier.user), system: system.saturatingSub(earlier.system))
    }
}

import CIceboxShim
import Glibc

/// Time in nanoseconds. Monotonic for durations and deadlines (immune to clock changes),
/// wall-clock only for the human-readable timestamp of an event.
public enum Clock {

    public static func monotonicNanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    public static func wallNanos() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// RFC 3339 in UTC with microseconds: 2026-11-30T08:09:23.123456Z.
    public static func rfc3339(wallNanos: Int64) -> String {
        var seconds = time_t(wallNanos / 1_000_000_000)
        let micros = Int((wallNanos % 1_000_000_000) / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ v: Int32, _ w: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, w - s.count)) + s
        }
        let micro = String(micros)
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2))."
            + String(repeating: "0", count: 6 - micro.count) + micro + "Z"
    }
}

import CIceboxShim
import Glibc

/// Time in nanoseconds. Monotonic for durations and deadlines (immune to clock changes),
/// wall-clock only for the human-readable timestamp of an event.
package enum Clock {
    package static func monotonicNanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    package static func wallNanos() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// RFC 3339 in UTC with microseconds: 2026-11-30T08:09:23.123456Z. Before 1970 it says
    /// 1970-01-01T00:00:00.000000Z (a wall clock set that far back is wrong anyway); Int64
    /// nanoseconds end in 2262, so the year has four digits.
    package static func rfc3339(wallNanos: Int64) -> String {
        let wall = max(0, wallNanos)
        var seconds = time_t(wall / 1_000_000_000)
        let micros = Int((wall % 1_000_000_000) / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        // Written into one buffer: interpolating and padding seven Strings took ~4 µs a
        // timestamp, and every state change and event makes one.
        return String(unsafeUninitializedCapacity: 27) { buf in
            var at = 0
            func put(_ value: Int, _ width: Int) {
                var v = value
                for k in stride(from: width - 1, through: 0, by: -1) {
                    buf[at + k] = UInt8(48 + v % 10)
                    v /= 10
                }
                at += width
            }
            func put(_ c: Unicode.Scalar) {
                buf[at] = UInt8(ascii: c)
                at += 1
            }
            put(Int(parts.tm_year) + 1900, 4)
            put("-")
            put(Int(parts.tm_mon) + 1, 2)
            put("-")
            put(Int(parts.tm_mday), 2)
            put("T")
            put(Int(parts.tm_hour), 2)
            put(":")
            put(Int(parts.tm_min), 2)
            put(":")
            put(Int(parts.tm_sec), 2)
            put(".")
            put(micros, 6)
            put("Z")
            return at
        }
    }
}

import Glibc
import IceboxCore

/// Times as icebox shows and reads them: ages (`4.1s`, `3m`, `2h`), RFC 3339 timestamps,
/// local clock times, and the `--since`/`--until` bounds of `icebox log`. Local time comes
/// from an offset function (seconds east of UTC at an instant) so tests need no TZ.
enum TimeText {
    /// Seconds east of UTC at the given Unix time, from the C library's local time (TZ).
    static func localOffset(atSeconds seconds: Int64) -> Int {
        var t = time_t(seconds)
        var parts = tm()
        localtime_r(&t, &parts)
        return Int(parts.tm_gmtoff)
    }

    /// An age with one unit: 0.4s, 4.1s, 42s, 3m, 2h, 5d (whole units from a minute on).
    static func age(_ nanos: UInt64) -> String {
        let seconds = nanos / 1_000_000_000
        if seconds < 10 { return DurationText.formatFixed(Double(nanos) / 1e9, 1) + "s" }
        if seconds < 60 { return "\(seconds)s" }
        if seconds < 3600 { return "\(seconds / 60)m" }
        if seconds < 86400 { return "\(seconds / 3600)h" }
        return "\(seconds / 86400)d"
    }

    /// The calendar fields of a Unix time (nanoseconds) at a UTC offset.
    struct Civil: Equatable {
        var year, month, day, hour, minute, second: Int
        var micros: Int

        var date: String { "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))" }
        var clock: String { "\(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2)).\(pad(micros, 6))" }

        func pad(_ v: Int, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
    }

    static func civil(wallNanos: Int64, offsetSeconds: Int) -> Civil {
        var (seconds, nanos) = wallNanos.quotientAndRemainder(dividingBy: 1_000_000_000)
        if nanos < 0 { seconds -= 1; nanos += 1_000_000_000 }
        var t = time_t(seconds + Int64(offsetSeconds))
        var parts = tm()
        gmtime_r(&t, &parts)
        return Civil(
            year: Int(parts.tm_year) + 1900, month: Int(parts.tm_mon) + 1, day: Int(parts.tm_mday),
            hour: Int(parts.tm_hour), minute: Int(parts.tm_min), second: Int(parts.tm_sec), micros: Int(nanos / 1000))
    }

    /// Unix seconds of a calendar time in UTC (timegm does not look at TZ).
    static func unixSeconds(_ c: Civil) -> Int64 {
        var parts = tm()
        parts.tm_year = Int32(c.year - 1900)
        parts.tm_mon = Int32(c.month - 1)
        parts.tm_mday = Int32(c.day)
        parts.tm_hour = Int32(c.hour)
        parts.tm_min = Int32(c.minute)
        parts.tm_sec = Int32(c.second)
        return Int64(timegm(&parts))
    }

    /// Unix seconds of a local calendar time: its UTC reading less the offset in force then.
    static func localSeconds(_ c: Civil, offset: (Int64) -> Int) -> Int64 {
        let utc = unixSeconds(c)
        return utc - Int64(offset(utc - Int64(offset(utc))))
    }

    /// An RFC 3339 timestamp ("2026-11-30T08:09:23.123456Z", "...+01:00", 'T' or a space
    /// between date and time, fraction optional) as Unix nanoseconds. Without a zone it is
    /// local time, and a date alone is local midnight. Nil if it is none of these.
    static func parseTimestamp(_ text: String, offset: (Int64) -> Int) -> Int64? {
        let b = Array(text.utf8)
        func number(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= b.count else { return nil }
            var v = 0
            for i in from..<(from + count) {
                guard b[i] >= 48 && b[i] <= 57 else { return nil }
                v = v * 10 + Int(b[i] - 48)
            }
            return v
        }
        guard b.count >= 10, let year = number(0, 4), b[4] == 45, let month = number(5, 2), b[7] == 45, let day = number(8, 2),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var c = Civil(year: year, month: month, day: day, hour: 0, minute: 0, second: 0, micros: 0)
        if b.count == 10 { return unixNanos(localSeconds(c, offset: offset)) }
        guard b.count >= 16, b[10] == 84 || b[10] == 116 || b[10] == 32, let hour = number(11, 2), b[13] == 58,
            let minute = number(14, 2), hour < 24, minute < 60
        else { return nil }
        c.hour = hour
        c.minute = minute
        var i = 16
        if i < b.count && b[i] == 58 {
            guard let second = number(17, 2), second <= 60 else { return nil }
            c.second = second
            i = 19
        }
        var nanos: Int64 = 0
        if i < b.count && b[i] == 46 {
            i += 1
            var digits = 0
            while i < b.count && b[i] >= 48 && b[i] <= 57 {
                if digits < 9 { nanos = nanos * 10 + Int64(b[i] - 48) }
                digits += 1
                i += 1
            }
            guard digits > 0 else { return nil }
            if digits < 9 { for _ in digits..<9 { nanos *= 10 } }
        }
        if i == b.count { return unixNanos(localSeconds(c, offset: offset), plus: nanos) }
        if (b[i] == 90 || b[i] == 122) && i + 1 == b.count { return unixNanos(unixSeconds(c), plus: nanos) }
        guard b[i] == 43 || b[i] == 45, i + 6 == b.count, let oh = number(i + 1, 2), b[i + 3] == 58, let om = number(i + 4, 2) else {
            return nil
        }
        let east = Int64((oh * 60 + om) * 60) * (b[i] == 43 ? 1 : -1)
        return unixNanos(unixSeconds(c) - east, plus: nanos)
    }

    /// Unix seconds (and a fraction) as Unix nanoseconds, or nil outside what an Int64 of
    /// nanoseconds holds (about 1678 to 2262): `--until 4052-01-01` is a usage error, not a trap.
    static func unixNanos(_ seconds: Int64, plus nanos: Int64 = 0) -> Int64? {
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return nil }
        let (sum, over) = scaled.addingReportingOverflow(nanos)
        return over ? nil : sum
    }

    /// A `--since`/`--until` bound as Unix nanoseconds: a duration means that long before
    /// `now` (10m, 1h30m, 90s); HH:MM or HH:MM:SS is that time today, local; otherwise an
    /// RFC 3339 timestamp (or a date, local midnight).
    static func parseBound(_ text: String, nowWallNanos: Int64, offset: (Int64) -> Int) -> Int64? {
        if let ago = DurationText.parse(text), ago <= UInt64(Int64.max) { return nowWallNanos - Int64(ago) }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        if parts.count == 2 || parts.count == 3, parts.allSatisfy({ (1...2).contains($0.count) && $0.allSatisfy(\.isASCII) }),
            let h = Int(parts[0]), let m = Int(parts[1]), h < 24, m < 60
        {
            let s = parts.count == 3 ? Int(parts[2]) : 0
            guard let s, s < 60 else { return nil }
            var today = civil(wallNanos: nowWallNanos, offsetSeconds: offset(nowWallNanos / 1_000_000_000))
            (today.hour, today.minute, today.second, today.micros) = (h, m, s, 0)
            return unixNanos(localSeconds(today, offset: offset))
        }
        return parseTimestamp(text, offset: offset)
    }
}

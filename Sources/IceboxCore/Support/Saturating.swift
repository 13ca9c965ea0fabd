/// Deadline arithmetic on monotonic nanoseconds. Durations come from users and from apps
/// (`--grace`, EXTEND_TIMEOUT_USEC, a request's time-out): a huge one means "as long as allowed",
/// never a trap and never a wrap to a tiny value.
extension UInt64 {
    /// self + other, or UInt64.max when that overflows.
    package func saturatingAdd(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }

    /// self - other, or 0 when other is larger.
    package func saturatingSub(_ other: UInt64) -> UInt64 { self > other ? self - other : 0 }
}

extension Optional where Wrapped == UInt64 {
    /// The earlier of two deadlines, either maybe unarmed (nil), without the two arrays that
    /// `[a, b].compactMap { $0 }.min()` builds (asked of every app every turn: ms with 1,000 apps).
    package func earlier(_ other: UInt64?) -> UInt64? {
        guard let self else { return other }
        guard let other else { return self }
        return Swift.min(self, other)
    }
}

/// Time arithmetic that clamps instead of trapping: deadlines may be `UInt64.max` ("no
/// deadline"), and a caller's `now` may lag an operation's start by a few nanoseconds.
extension UInt64 {
    /// self + other, or `UInt64.max` where that would overflow.
    func addingSaturated(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }

    /// self - other, or 0 where that would go below zero.
    func subtractingSaturated(_ other: UInt64) -> UInt64 { self > other ? self - other : 0 }
}

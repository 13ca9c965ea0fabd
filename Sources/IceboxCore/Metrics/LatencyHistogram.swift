/// A Prometheus histogram of durations with fixed buckets. Observations are whole nanoseconds and
/// the sum is kept in nanoseconds too, so nothing is lost to floating point until the text is
/// written (in seconds, the base unit Prometheus expects).
package struct LatencyHistogram: Sendable, Equatable {
    /// 50 µs to 60 s: a cgroup freeze takes tens of microseconds, a SIGSTOP freeze of a big
    /// app or a cold start seconds, a grace up to its length (5 s by default).
    package static let defaultBoundsNanos: [UInt64] = [
        50_000, 100_000, 250_000, 500_000,
        1_000_000, 2_500_000, 5_000_000, 10_000_000, 25_000_000, 50_000_000, 100_000_000, 250_000_000, 500_000_000,
        1_000_000_000, 2_500_000_000, 5_000_000_000, 10_000_000_000, 30_000_000_000, 60_000_000_000,
    ]

    /// The buckets' upper bounds (inclusive, as Prometheus's `le`), ascending; +Inf is implied.
    package let boundsNanos: [UInt64]
    /// Observations per bucket, not cumulative; the last entry counts those above every bound.
    package private(set) var bucketCounts: [UInt64]
    package private(set) var count: UInt64 = 0
    package private(set) var sumNanos: UInt64 = 0

    package init(boundsNanos: [UInt64] = LatencyHistogram.defaultBoundsNanos) {
        precondition(zip(boundsNanos, boundsNanos.dropFirst()).allSatisfy { $0 < $1 }, "histogram bounds must ascend")
        self.boundsNanos = boundsNanos
        bucketCounts = Array(repeating: 0, count: boundsNanos.count + 1)
    }

    package mutating func observe(nanos: UInt64) {
        bucketCounts[boundsNanos.firstIndex { nanos <= $0 } ?? boundsNanos.count] += 1
        count += 1
        sumNanos = sumNanos.saturatingAdd(nanos)
    }

    /// What `_bucket` samples show: for each bound, then +Inf, the observations at or below it.
    package var cumulativeCounts: [UInt64] {
        var running: UInt64 = 0
        return bucketCounts.map {
            running += $0
            return running
        }
    }
}

import IceboxCore
import Testing

/// The re-read schedule of a freeze or thaw the kernel has not confirmed yet.
struct BackoffTests {
    @Test func twentyMicrosecondsApartAtFirstThenFivePercentOfTheElapsedTime() {
        var b = Backoff(cap: 10_000_000)
        let start: UInt64 = 1_000_000_000
        #expect(b.next(now: start, deadline: .max) == start + 20_000)
        #expect(b.next(now: start + 100_000, deadline: .max) == start + 120_000, "5% of 100 µs is less than 20 µs")
        #expect(b.next(now: start + 1_000_000, deadline: .max) == start + 1_050_000, "5% of 1 ms")
        #expect(b.next(now: start + 2_000_000_000, deadline: .max) == start + 2_010_000_000, "capped")
    }

    @Test func atLeastFourTimesWhatTheLookCost() {
        var b = Backoff(cap: 10_000_000)
        let start: UInt64 = 1_000_000_000
        #expect(b.next(now: start, deadline: .max, lookCost: 100_000) == start + 400_000, "a 100 µs scan waits 400 µs")
        #expect(b.next(now: start + 10_000_000, deadline: .max, lookCost: 1_000) == start + 10_500_000, "a cheap look: 5%")
        #expect(b.next(now: start + 20_000_000, deadline: .max, lookCost: 5_000_000) == start + 30_000_000, "capped")
        #expect(b.next(now: start + 30_000_000, deadline: .max, lookCost: .max) == start + 40_000_000, "saturates, capped")
    }

    @Test func neverPastTheDeadlineAndSaturates() {
        var b = Backoff(cap: 10_000_000)
        #expect(b.next(now: 5, deadline: 6) == 6)
        var late = Backoff(cap: .max)
        _ = late.next(now: 0, deadline: .max)
        #expect(late.next(now: .max - 1, deadline: .max) == .max)
    }
}

import Glibc
import IceboxSystem
import Testing

@testable import IceboxCore

/// An app's recent freezes decide how long the next one goes without a re-read: three quarters
/// of the fastest of the last four, from 200 µs up. The schedule is a value; the freezers that
/// honour it run on real processes and real cgroups.
struct FreezeHistoryTests {
    @Test("no history, or freezes too short to be worth it: the schedule stays")
    func nothingToHoldOffFor() {
        var history = FreezeHistory()
        #expect(history.holdOff == nil)
        history.record(150_000)
        history.record(900_000)
        #expect(history.holdOff == nil, "the fastest of them took 150 µs")
    }

    @Test("three quarters of the fastest of the last four")
    func threeQuartersOfTheFastest() {
        var history = FreezeHistory()
        for nanos: UInt64 in [800_000, 400_000, 1_200_000] { history.record(nanos) }
        #expect(history.holdOff == 300_000)
        history.record(600_000)
        #expect(history.holdOff == 300_000, "400 µs is still one of the last four")
        history.record(700_000)
        #expect(history.recent == [400_000, 1_200_000, 600_000, 700_000], "the oldest (800 µs) dropped")
        history.record(900_000)
        #expect(history.holdOff == 450_000, "the 400 µs freeze has aged out: 600 µs is the fastest")
    }

    @Test("an app that became faster is held off less at once")
    func fasterAtOnce() {
        var history = FreezeHistory()
        for _ in 0..<4 { history.record(4_000_000) }
        #expect(history.holdOff == 3_000_000)
        history.record(3_000_000)  // a freeze held off to 3 ms and confirmed there
        #expect(history.holdOff == 2_250_000)
        history.record(250_000)
        #expect(history.holdOff == 187_500)
        history.record(100_000)
        #expect(history.holdOff == nil, "the fastest is now too short to be worth it")
    }

    @Test("a hold-off delays the re-reads, then the schedule resumes; never past the deadline")
    func backoffHoldsOff() {
        let start: UInt64 = 1_000_000_000
        var b = Backoff(cap: 10_000_000)
        b.holdOff(until: start + 300_000)
        #expect(b.next(now: start, deadline: .max) == start + 300_000)
        #expect(b.next(now: start + 300_000, deadline: .max) == start + 320_000, "then 20 µs apart")
        b.holdOff(until: start + 100_000)
        #expect(b.notBefore == start + 300_000, "a hold-off is never shortened")
        var late = Backoff(cap: 10_000_000)
        late.holdOff(until: start + 5_000_000)
        #expect(late.next(now: start, deadline: start + 1_000_000) == start + 1_000_000)
        var saturated = Backoff(cap: 10_000_000)
        saturated.holdOff(until: .max)
        #expect(saturated.next(now: start, deadline: .max) == .max)
    }
}

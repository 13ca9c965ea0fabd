import Testing

@testable import IceboxCore

/// The daemon's idle exit: counted from the first moment it is idle, reset by any work.
struct IdleExitTests {
    @Test func theCountStartsAtTheFirstIdleMomentAndWorkResetsIt() {
        var exit = IdleExit(afterNanos: 1_000)
        let busy = exit.deadline(idle: false, now: 10)
        let first = exit.deadline(idle: true, now: 20)
        let later = exit.deadline(idle: true, now: 500)
        #expect(busy == nil)
        #expect(first == 1_020)
        #expect(later == 1_020, "still idle: the same deadline")
        let early = exit.isDue(idle: true, now: 1_019)
        let onTime = exit.isDue(idle: true, now: 1_020)
        #expect(!early && onTime)
        let busyAgain = exit.isDue(idle: false, now: 5_000)
        #expect(!busyAgain && exit.since == nil, "work resets the count")
        let second = exit.deadline(idle: true, now: 6_000)
        #expect(second == 7_000, "a new idle spell counts from its own start")
    }

    /// Busy at one question (the last client still connected), idle at the next (its final
    /// reply went out and its connection closed): the next gives the whole deadline, counted
    /// from then. The daemon's loop asks right before it sleeps, after the turn's replies.
    @Test func becomingIdleAfterTheExitCheckStillGivesTheSleepADeadline() {
        var exit = IdleExit(afterNanos: 1_000_000_000)
        let checked = exit.isDue(idle: false, now: 100)  // a client is still connected
        let sleepUntil = exit.deadline(idle: true, now: 150)  // the flush closed it
        let due = exit.isDue(idle: true, now: 1_000_000_150)
        #expect(!checked)
        #expect(sleepUntil == 1_000_000_150)
        #expect(due)
    }

    @Test func aDaemonWithoutIdleExitNeverLeavesButStillTracksIdleness() {
        var exit = IdleExit(afterNanos: nil)
        let deadline = exit.deadline(idle: true, now: 5)
        let due = exit.isDue(idle: true, now: .max)
        #expect(deadline == nil && !due)
        #expect(exit.since == 5)
    }

    @Test func aDeadlineBeyondTheClockSaturates() {
        var exit = IdleExit(afterNanos: .max)
        let deadline = exit.deadline(idle: true, now: 10)
        let due = exit.isDue(idle: true, now: .max - 1)
        #expect(deadline == .max && !due)
    }
}

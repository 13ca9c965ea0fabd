import Testing

@testable import IceboxSystem

@Suite("Clock")
struct ClockTests {
    @Test func epochIsFormattedWithSixZeroMicros() {
        #expect(Clock.rfc3339(wallNanos: 0) == "1970-01-01T00:00:00.000000Z")
    }

    @Test func microsecondsAreTruncatedAndZeroPadded() {
        // 1700000000 s is 2023-11-14T22:13:20Z.
        #expect(Clock.rfc3339(wallNanos: 1_700_000_000_123_456_789) == "2023-11-14T22:13:20.123456Z")
        #expect(Clock.rfc3339(wallNanos: 1_700_000_000_000_001_000) == "2023-11-14T22:13:20.000001Z")
        #expect(Clock.rfc3339(wallNanos: 1_700_000_000_000_000_999) == "2023-11-14T22:13:20.000000Z")
        #expect(Clock.rfc3339(wallNanos: 1_700_000_000_999_999_999) == "2023-11-14T22:13:20.999999Z")
    }

    @Test func singleDigitDateAndTimeFieldsArePadded() {
        // 2001-02-03T04:05:06Z = 981173106 s.
        #expect(Clock.rfc3339(wallNanos: 981_173_106_000_050_000) == "2001-02-03T04:05:06.000050Z")
    }

    @Test func leapDayAndEndOfYear() {
        // 2024-02-29T23:59:59Z = 1709251199 s; 1999-12-31T23:59:59Z = 946684799 s.
        #expect(Clock.rfc3339(wallNanos: 1_709_251_199_500_000_000) == "2024-02-29T23:59:59.500000Z")
        #expect(Clock.rfc3339(wallNanos: 946_684_799_000_000_000) == "1999-12-31T23:59:59.000000Z")
    }

    @Test func beforeTheEpochIsTheEpochAndTheLastNanosecondIsIn2262() {
        #expect(Clock.rfc3339(wallNanos: -1) == "1970-01-01T00:00:00.000000Z")
        #expect(Clock.rfc3339(wallNanos: .min) == "1970-01-01T00:00:00.000000Z")
        #expect(Clock.rfc3339(wallNanos: .max) == "2262-04-11T23:47:16.854775Z")
    }

    @Test func monotonicClockDoesNotGoBackwards() {
        let a = Clock.monotonicNanos()
        let b = Clock.monotonicNanos()
        #expect(b >= a)
        #expect(a > 0)
    }

    @Test func wallClockIsAfter2020() {
        #expect(Clock.wallNanos() > 1_577_836_800 * 1_000_000_000)
    }
}

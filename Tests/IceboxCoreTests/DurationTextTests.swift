import Glibc
import Testing

@testable import IceboxCore

@Suite("DurationText and SizeText")
struct DurationTextTests {
    @Test(
        arguments: [
            ("250ms", 250_000_000),
            ("5s", 5_000_000_000),
            ("1.5s", 1_500_000_000),
            ("2m", 120_000_000_000),
            ("1m30s", 90_000_000_000),
            ("100us", 100_000),
            ("100\u{00B5}s", 100_000),  // MICRO SIGN, as the help text prints it
            ("1h", 3_600_000_000_000),
            ("1h1m1s", 3_661_000_000_000),
            ("750ns", 750),
            ("0s", 0),
            (".5s", 500_000_000),
            ("3", 3_000_000_000),
            ("0.25", 250_000_000),
            ("0", 0),
        ] as [(String, UInt64)])
    func parsesDurations(_ text: String, _ nanos: UInt64) {
        #expect(DurationText.parse(text) == nanos)
    }

    @Test(arguments: ["", "5x", "-1", "-1s", "ms", "s", "5 s", "5s ", " 5s", "1..5s", "5sec", "s5", "1m-30s", "nan", "inf", "1.5.s"])
    func rejectsMalformedDurations(_ text: String) {
        #expect(DurationText.parse(text) == nil)
    }

    @Test func millisecondsAreNotReadAsMinutes() {
        #expect(DurationText.parse("1ms") == 1_000_000)
        #expect(DurationText.parse("1m") == 60_000_000_000)
    }

    @Test func hugeUnitValuesAreRejected() {
        #expect(DurationText.parse("99999999999999999999h") == nil)
        #expect(DurationText.parse("18446744074s") == nil)
    }

    @Test func hugePlainNumbersAreRejectedRatherThanTrapping() {
        // 1e11 seconds is 1e20 ns, more than UInt64 holds.
        #expect(DurationText.parse("100000000000") == nil)
        #expect(DurationText.parse("1e300") == nil)
        #expect(DurationText.parse("1000000000") == 1_000_000_000_000_000_000)
    }

    @Test(
        arguments: [
            (0, "0 ns"),
            (999, "999 ns"),
            (1_500, "1.50 µs"),
            (212_000, "212 µs"),
            (12_340, "12.3 µs"),
            (84_200_000, "84.2 ms"),
            (5_000_000, "5.00 ms"),
            (4_100_000_000, "4.1s"),
            (1_000_000_000, "1.0s"),
            (59_000_000_000, "59.0s"),
            (60_000_000_000, "1m00s"),
            (125_000_000_000, "2m05s"),
            (3_599_000_000_000, "59m59s"),
            (3_600_000_000_000, "1h00m"),
            (7_380_000_000_000, "2h03m"),
        ] as [(UInt64, String)])
    func formatsDurations(_ nanos: UInt64, _ text: String) {
        #expect(DurationText.format(nanos) == text)
    }

    @Test func formatFixedPadsAndRounds() {
        #expect(DurationText.formatFixed(4.1, 1) == "4.1")
        #expect(DurationText.formatFixed(4, 2) == "4.00")
        #expect(DurationText.formatFixed(212.4, 0) == "212")
        #expect(DurationText.formatFixed(84.25, 1) == "84.3")
        #expect(DurationText.formatFixed(1.234, 2) == "1.23")
    }

    @Test(
        arguments: [
            (0, "0 B"),
            (1023, "1023 B"),
            (1024, "1.0 KiB"),
            (1536, "1.5 KiB"),
            (18_874_368, "18.0 MiB"),
            (18040 * 1024, "17.6 MiB"),
            (1 << 30, "1.0 GiB"),
            (5 << 40, "5.0 TiB"),
            (2048 << 40, "2048.0 TiB"),
        ] as [(UInt64, String)])
    func formatsSizes(_ bytes: UInt64, _ text: String) {
        #expect(SizeText.format(bytes) == text)
    }
}

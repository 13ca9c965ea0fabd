import IceboxCore
import IceboxSystem
import Testing

@testable import IceboxCLI

/// Inputs the fuzz targets (scripts/fuzz) trapped on, each now an answer: nil or a usage error.
@Suite("Fuzz regressions")
struct FuzzRegressionTests {
    static let utc: @Sendable (Int64) -> Int = { _ in 0 }

    @Test("a timestamp beyond what Int64 nanoseconds hold is no time, not a trap (log --until 4052-11-30T08:09:23+01:00)")
    func farTimestamps() {
        #expect(TimeText.parseBound("4052-11-30T08:09:23.123456+01:00", nowWallNanos: 0, offset: Self.utc) == nil)
        #expect(TimeText.parseTimestamp("9999-12-31", offset: Self.utc) == nil)
        #expect(TimeText.parseTimestamp("1000-01-01T00:00:00Z", offset: Self.utc) == nil)
        #expect(TimeText.parseTimestamp("2262-04-11T23:47:16Z", offset: Self.utc) == 9_223_372_036_000_000_000)
        #expect(TimeText.parseTimestamp("2026-11-30T12:00:00Z", offset: Self.utc) == Int64(1_796_040_000) * 1_000_000_000)
    }

    @Test("bench counts are bounded, so warm-ups plus runs cannot overflow")
    func benchCounts() throws {
        let parsed = try ArgumentParser.parse(
            ["--runs", "9223372036854775807", "--warmup", "1", "--", "true"], spec: BenchCommand.spec)
        #expect(throws: (any Error).self) { try BenchCommand.count(parsed, "runs", default: 10, minimum: 1) }
        let fine = try ArgumentParser.parse(["--runs", "100000", "--", "true"], spec: BenchCommand.spec)
        #expect(try BenchCommand.count(fine, "runs", default: 10, minimum: 1) == 100_000)
    }

    @Test("a kB value whose bytes overflow a UInt64 is no value, not a trap")
    func hugeKiloBytes() {
        #expect(ProcFS.parseKiloBytes("18446744073709551615 kB") == nil)
        #expect(ProcFS.parseKiloBytes("18014398509481983 kB") == UInt64(18_014_398_509_481_983) * 1024)
        #expect(ProcFS.parseKiloBytes("18040 kB") == 18040 * 1024)
    }

    @Test("event-line: a line JSON rejects (a malformed number) or leaves open (a key twice) is read as JSONDecoder reads it")
    func eventLinesReadAsJSONDecoderReadsThem() {
        func read(_ line: String) -> Event? { Array(line.utf8).withUnsafeBytes { JSONLines.decode(Event.self, bytes: $0) } }
        let good = #"{"app":"web","detail":"d","event":"notice","grace_ns":5000000000,"monotonic_ns":1,"time":"t"}"#
        #expect(read(good)?.app == "web" && read(good)?.graceNanos == 5_000_000_000)
        let mangled = [
            good.replacing("5000000000", with: "5000000'00"),
            good.replacing(#""monotonic_ns":1"#, with: #""monotonic_ns":+1"#),
            good.replacing(#""monotonic_ns":1"#, with: #""monotonic_ns":01"#),
            good.replacing(#""app":"web","#, with: #""app":"web","app":"db","#),
            good.replacing(#""grace_ns":5000000000"#, with: #""grace_ns":[1,{"a":"\q"}]"#),
            good.replacing(#""grace_ns":5000000000"#, with: #""grace_ns":[1,{"a":"\n"}]"#),
            good.replacing(#""time":"t""#, with: #""time":"t","unknown":[1,{"a":"\n"}]"#),
        ]
        for line in mangled {
            #expect(read(line) == (try? JSONLines.decodeWithFoundation(Event.self, line)), "\(line)")
        }
        #expect(read(mangled[0]) == nil && read(mangled[6])?.app == "web")
    }

    @Test("event-line: a key only reads as a field when it is the key snake_case writes for it")
    func oneKeyAName() {
        #expect(JSONKeyStyle.camel("exit_status") == "exitStatus")
        #expect(JSONKeyStyle.camel("monotonic_ns") == "monotonicNanos")
        #expect(JSONKeyStyle.camel("freezer_v1") == "freezerV1")
        for loose in ["exit_status_", "exit__status", "monotonic_nanos", "exit_Status"] { #expect(JSONKeyStyle.camel(loose) == loose) }
        let line = #"{"app":"web","detail":"d","event":"exit","exit_status_":249,"monotonic_ns":1,"time":"t"}"#
        #expect(JSONLines.decode(Event.self, line)?.exitStatus == nil)
    }
}

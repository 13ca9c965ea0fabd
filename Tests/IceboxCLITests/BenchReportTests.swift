import IceboxCore
import Testing

@testable import IceboxCLI

/// The pieces of the bench exports and of its warning summary, without a daemon.
@Suite("Bench report")
struct BenchReportTests {
    @Test("seconds are written exactly from nanoseconds")
    func decimalSeconds() {
        #expect(BenchReport.decimalSeconds(79_500) == "0.0000795")
        #expect(BenchReport.decimalSeconds(1_000_000_000) == "1")
        #expect(BenchReport.decimalSeconds(132_456_789) == "0.132456789")
        #expect(BenchReport.decimalSeconds(61_500_000_000) == "61.5")
        #expect(BenchReport.decimalSeconds(0) == "0")
    }

    @Test("CSV fields are quoted only when they must be, quotes doubled")
    func csvFields() {
        #expect(BenchReport.csvField("cold_start") == "cold_start")
        #expect(BenchReport.csvField("a, b") == "\"a, b\"")
        #expect(BenchReport.csvField("say \"hi\"") == "\"say \"\"hi\"\"\"")
        #expect(BenchReport.csvField(" padded") == "\" padded\"")
        #expect(BenchReport.csvField("two\nlines") == "\"two\nlines\"")
    }

    @Test("Markdown cells escape pipes; code spans survive backticks")
    func markdown() {
        #expect(BenchReport.markdownCell("a | b") == "a \\| b")
        #expect(BenchReport.markdownCode("sh -c 'x|y'") == "`sh -c 'x|y'`")
        #expect(BenchReport.markdownCode("echo `date`") == "`` echo `date` ``", "padded on both sides, as CommonMark strips")
    }

    @Test("cgroup cpu.stat gives user and system time in nanoseconds")
    func cpuStat() {
        let text = "usage_usec 373400\nuser_usec 310352\nsystem_usec 63048\nnice_usec 0\n"
        #expect(CPUTime.parseCgroupStat(text) == CPUTime(user: 310_352_000, system: 63_048_000))
        #expect(CPUTime.parseCgroupStat("usage_usec 5\n") == nil)
        #expect(CPUTime(user: 5, system: 9).since(CPUTime(user: 2, system: 10)) == CPUTime(user: 3, system: 0))
        #expect(BenchReport.mean([CPUTime(user: 2, system: 4), nil, CPUTime(user: 4, system: 8)]) == CPUTime(user: 3, system: 6))
        #expect(BenchReport.mean([nil, nil]) == nil)
    }

    @Test("warnings: one line per kind, one block")
    func warningSummary() {
        #expect(BenchReport.warningSummary([]) == [])
        #expect(BenchReport.warningSummary(["x"]) == ["icebox bench: warning: x"])
        #expect(BenchReport.warningSummary(["x", "y"]) == ["icebox bench: 2 warnings:", "  - x", "  - y"])
    }

    @Test("--style as hyperfine's: progress and colour")
    func styles() {
        #expect(BenchStyle.auto.showsProgress(terminal: true) && !BenchStyle.auto.showsProgress(terminal: false))
        #expect(BenchStyle.full.showsProgress(terminal: false) && BenchStyle.full.usesColour(terminal: false))
        #expect(!BenchStyle.basic.showsProgress(terminal: true) && !BenchStyle.basic.usesColour(terminal: true))
        #expect(BenchStyle.nocolor.showsProgress(terminal: true) && !BenchStyle.nocolor.usesColour(terminal: true))
        #expect(!BenchStyle.color.showsProgress(terminal: true) && BenchStyle.color.usesColour(terminal: false))
        #expect(!BenchStyle.none.printsResults && !BenchStyle.none.showsProgress(terminal: true))
    }
}

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
        #expect(BenchStyle.auto.usesColour(auto: true) && !BenchStyle.auto.usesColour(auto: false))
        #expect(BenchStyle.full.showsProgress(terminal: false) && BenchStyle.full.usesColour(auto: false))
        #expect(!BenchStyle.basic.showsProgress(terminal: true) && !BenchStyle.basic.usesColour(auto: true))
        #expect(BenchStyle.nocolor.showsProgress(terminal: true) && !BenchStyle.nocolor.usesColour(auto: true))
        #expect(!BenchStyle.color.showsProgress(terminal: true) && BenchStyle.color.usesColour(auto: false))
        #expect(!BenchStyle.none.printsResults && !BenchStyle.none.showsProgress(terminal: true))
    }

    @Test("coloured results: the figures painted as hyperfine paints them, the same text without the colour")
    func colouredLines() {
        let report = Self.report(toDisk: false)
        let plain = report.lines(), coloured = report.lines(colour: true)
        #expect(!plain.joined().contains("\u{1B}"), "\(plain)")
        #expect(coloured.count == plain.count)
        let cold = coloured[0]
        #expect(cold.hasPrefix("\u{1B}[1mCold start\u{1B}[0m"), "\(cold)")
        #expect(cold.contains("\u{1B}[1;32m210 ms\u{1B}[0m ± \u{1B}[32m"), "\(cold)")
        #expect(cold.contains("[\u{1B}[36m") && cold.contains("\u{1B}[35m"), "\(cold)")
        // Take the colour out and the plain line is left.
        let stripped = coloured.map { $0.replacing(/\u{1B}\[[0-9;]*m/, with: "") }
        #expect(stripped == plain, "\(stripped) against \(plain)")
    }

    /// Two runs' figures as BenchSession gives them, with or without a trip to disk.
    static func report(toDisk: Bool) -> BenchReport {
        func disk(_ restore: UInt64, _ image: UInt64, _ freed: UInt64?) -> BenchSession.DiskRun? {
            toDisk ? BenchSession.DiskRun(checkpoint: 120_000_000, imageBytes: image, memoryFreedBytes: freed, restore: restore) : nil
        }
        let runs = [
            BenchSession.Run(cold: 200_000_000, hot: 2_000_000, disk: disk(80_000_000, 8 << 20, 9 << 20)),
            BenchSession.Run(cold: 220_000_000, hot: 3_000_000, disk: disk(120_000_000, 10 << 20, 11 << 20)),
        ]
        var events: [Event] = []
        if toDisk {
            for (i, nanos) in [UInt64(50_000_000), 70_000_000].enumerated() {
                let at = Instant(monotonicNanos: UInt64(i + 1) * 1_000_000_000, wallNanos: 0)
                events.append(
                    Event(
                        app: "bench", pid: 1, kind: .restore, from: .onDisk, to: .active, durationNanos: nanos, detail: "restored", at: at))
            }
        }
        return BenchReport(
            options: LaunchOptions(name: "bench", command: ["python3", "app.py"]), runs: 2, warmup: 0, evictEvery: 0,
            holdNanos: 100_000_000, measured: runs, events: events)
    }

    @Test("--to-disk: a disk row after hot, the checkpoint and criu's restore, disk vs cold, and the sizes' means")
    func diskRow() throws {
        let report = Self.report(toDisk: true)
        #expect(report.phases.map(\.id) == ["cold_start", "hot_resume", "disk_restore", "checkpoint", "restore"])
        let disk = try #require(report.phases.first { $0.id == "disk_restore" })
        #expect(disk.summary.samples == [80_000_000, 120_000_000] && disk.label == "Disk restore (resume → ready)")
        #expect(report.phases.first { $0.id == "restore" }?.summary.samples == [50_000_000, 70_000_000])
        #expect(report.diskSpeedupMedian == 2.1, "cold median 210 ms over disk median 100 ms")
        let lines = report.lines()
        #expect(lines.contains("Disk restore is 2.1× faster than cold start (median, same run)."), "\(lines)")
        #expect(lines.contains("Disk: image 9.0 MiB, 10.0 MiB of memory freed (mean of 2 checkpoints)."), "\(lines)")
        #expect(BenchReport.diskRatio(0.5) == "Disk restore is 2.0× slower than cold start")

        let json = report.jsonText()
        #expect(json.contains("\"phase\" : \"disk_restore\"") && json.contains("\"image_bytes\" : 9437184"), "\(json)")
        #expect(json.contains("\"memory_freed_bytes_mean\" : 10485760") && json.contains("\"disk_speedup_median\" : 2.1"), "\(json)")
        #expect(report.csvText().contains(",disk_restore,0.1,"), "\(report.csvText())")
        let markdown = report.markdownText()
        #expect(markdown.contains("| Disk restore (resume → ready) | 100.000 |"), "\(markdown)")
        #expect(markdown.contains("Disk restore is 2.1× faster than cold start (median)."), "\(markdown)")
    }

    @Test("without --to-disk: no disk row, no disk keys in the JSON")
    func noDiskRow() {
        let report = Self.report(toDisk: false)
        #expect(report.phases.map(\.id) == ["cold_start", "hot_resume"])
        #expect(report.diskSpeedupMedian == nil && report.diskLine == nil)
        let json = report.jsonText()
        #expect(!json.contains("disk") && !json.contains("image_bytes"), "\(json)")
    }
}

import Glibc
import IceboxTestSupport
import Testing

@testable import IceboxSystem

@Suite("ProcessUsage: the daemon's own figures from /proc")
struct ProcessUsageTests {
    /// A 52-field stat line: utime 250 (field 14), stime 50 (15), starttime 12345 (22), rss 410 (24).
    static func statLine(comm: String = "icebox", utime: String = "250") -> String {
        "77 (\(comm)) S 1 77 77 0 -1 4194560 1000 0 0 0 \(utime) 50 0 0 20 0 3 0 12345 "
            + "3133440 410 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
    }

    @Test func statLineHas52Fields() {
        #expect(Self.statLine().split(separator: " ").count == 52)
    }

    @Test func parseStatReadsCPUStartAndResidentPages() throws {
        let f = try #require(ProcFS.parseStat(Self.statLine(comm: "a ) b (c")))
        #expect([f.userTicks, f.systemTicks, f.startTimeTicks, f.residentPages] == [250, 50, 12345, 410])
    }

    @Test func parseStatRejectsShortOrGarbledLines() {
        #expect(ProcFS.parseStat("77 (x) S 1 2 3") == nil)
        #expect(ProcFS.parseStat("no parenthesis") == nil)
        #expect(ProcFS.parseStat(Self.statLine(utime: "x")) == nil)
    }

    @Test func bootTimeFromProcStat() {
        #expect(ProcessUsage.bootTime(procStat: "cpu  1 2 3\nintr 5\nbtime 1712345678\nprocesses 9\n") == 1_712_345_678)
        #expect(ProcessUsage.bootTime(procStat: "cpu 1 2 3\n") == nil)
    }

    @Test("read() against a fake /proc: every figure in base units")
    func readFakeProc() throws {
        let root = makeTemporaryDirectory("procusage")
        defer { removeTree(root) }
        mkdir(root + "/77", 0o755)
        mkdir(root + "/77/fd", 0o755)
        for fd in ["0", "1", "2", "5"] { writeFile(root + "/77/fd/" + fd, "") }
        writeFile(root + "/77/stat", Self.statLine())
        writeFile(root + "/stat", "cpu 1 2 3\nbtime 1700000000\n")
        let usage = ProcessUsage.read(pid: "77", procRoot: root, ticksPerSecond: 100, pageSize: 4096)
        #expect(usage.openDescriptors == 4)
        #expect(usage.residentBytes == 410 * 4096)
        #expect(usage.cpuNanos == 3_000_000_000)  // 300 ticks at 100 Hz
        #expect(usage.startTimeUnixNanos == 1_700_000_000_000_000_000 + 123_450_000_000)
    }

    @Test("read() leaves out what it cannot read")
    func readMissing() {
        let root = makeTemporaryDirectory("procusage")
        defer { removeTree(root) }
        #expect(ProcessUsage.read(pid: "77", procRoot: root) == ProcessUsage())
    }

    @Test("read() of this process gives plausible figures")
    func readSelf() throws {
        let usage = ProcessUsage.read()
        let fds = try #require(usage.openDescriptors)
        #expect(fds >= 3)
        #expect((usage.residentBytes ?? 0) > 1 << 20)
        let start = try #require(usage.startTimeUnixNanos)
        let now = UInt64(time(nil)) * 1_000_000_000
        #expect(start <= now + 1_000_000_000 && start > now - 86_400_000_000_000 * 365)
    }
}

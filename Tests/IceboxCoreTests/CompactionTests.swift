import Glibc
import IceboxSystem
import IceboxTestSupport
import Testing

@testable import IceboxCore

@Suite("MemoryMapping.parseMaps and ResidentMemory.parse")
struct MemoryMapsParsingTests {
    static let maps = """
        55d0c7a8e000-55d0c7a90000 r--p 00000000 fd:01 1311                       /usr/bin/my app
        55d0c8a00000-55d0c8a21000 rw-p 00000000 00:00 0                          [heap]
        7f1c2c000000-7f1c2c021000 rw-p 00000000 00:00 0 
        7f1c2d000000-7f1c2d400000 r--p 00001000 fd:01 4242                       /tmp/data  file (deleted)
        7f1c2e000000-7f1c2e001000 rw-s 00000000 00:01 77                         /dev/zero (deleted)
        7f1c2f000000-7f1c2f200000 ---p 00000000 00:00 0 
        7ffd1c9f0000-7ffd1ca11000 rw-p 00000000 00:00 0                          [stack]
        7ffd1cbfc000-7ffd1cc00000 r--p 00000000 00:00 0                          [vvar]
        7ffd1cc00000-7ffd1cc02000 r--p 00000000 00:00 0                          [vvar_vclock]
        7ffd1cc02000-7ffd1cc04000 r-xp 00000000 00:00 0                          [vdso]
        ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]

        """

    @Test func everyLineIsParsed() {
        let m = MemoryMapping.parseMaps(Self.maps)
        #expect(m.count == 11)
        #expect(
            m[0]
                == MemoryMapping(
                    start: 0x55d0_c7a8_e000, end: 0x55d0_c7a9_0000, permissions: "r--p", offset: 0, device: "fd:01", inode: 1311,
                    path: "/usr/bin/my app"))
        #expect(m[0].length == 0x2000)
        #expect(m[0].isFileBacked && m[0].isPrivate && !m[0].isDeleted)
    }

    @Test func pathsKeepTheirInnerSpacesAndTheDeletedMark() {
        let m = MemoryMapping.parseMaps(Self.maps)
        #expect(m[3].path == "/tmp/data  file (deleted)")
        #expect(m[3].isDeleted)
        #expect(m[3].offset == 0x1000)
        #expect(m[4].path == "/dev/zero (deleted)")
    }

    @Test func anonymousHeapAndStack() {
        let m = MemoryMapping.parseMaps(Self.maps)
        #expect(m[1].path == "[heap]" && !m[1].isFileBacked)
        #expect(m[2].path == "" && !m[2].isFileBacked)
        #expect(m[6].path == "[stack]")
    }

    @Test func onlyPrivateAccessibleAppMappingsAreCompactable() {
        let compactable = MemoryMapping.parseMaps(Self.maps).filter(\.isCompactable).map(\.path)
        // Shared (/dev/zero rw-s), PROT_NONE (---p) and the kernel's own mappings are left out.
        #expect(compactable == ["/usr/bin/my app", "[heap]", "", "/tmp/data  file (deleted)", "[stack]"])
    }

    @Test func malformedLinesAreSkipped() {
        let text = """
            garbage
            1000-2000 rw-p 0 00:00
            zzzz-2000 rw-p 00000000 00:00 0
            2000-1000 rw-p 00000000 00:00 0
            1000-2000 rwxps 00000000 00:00 0
            1000-2000 rw-p 00000000 00:00 0
            """
        #expect(MemoryMapping.parseMaps(text).map(\.start) == [0x1000])
        #expect(MemoryMapping.parseMaps("").isEmpty)
    }

    @Test func thisProcessHasAStackAndAVdso() throws {
        let m = try MemoryMapping.read(pid: getpid())
        #expect(m.contains { $0.path == "[stack]" && $0.isCompactable })
        #expect(m.contains { $0.path == "[vdso]" && !$0.isCompactable })
    }

    @Test func residentMemoryFromStatus() {
        let status = """
            Name:\tpython3
            VmPeak:\t  120000 kB
            VmRSS:\t   90112 kB
            RssAnon:\t   20480 kB
            RssFile:\t   69120 kB
            RssShmem:\t     512 kB
            Threads:\t1

            """
        #expect(
            ResidentMemory.parse(status: status)
                == ResidentMemory(rss: 90112 * 1024, rssAnon: 20480 * 1024, rssFile: 69120 * 1024, rssShmem: 512 * 1024))
        // A kernel thread has no Vm lines.
        #expect(ResidentMemory.parse(status: "Name:\tkthreadd\nState:\tS (sleeping)\n") == nil)
    }

    @Test func residentMemoryOfAnExitedProcessCountsAsNothing() {
        let dir = makeTemporaryDirectory("rss")
        defer { removeTree(dir) }
        mkdir(dir + "/10", 0o755)
        writeFile(dir + "/10/status", "VmRSS:\t100 kB\nRssAnon:\t60 kB\nRssFile:\t40 kB\nRssShmem:\t0 kB\n")
        let sum = ResidentMemory.read(pids: [10, 11, 10], procRoot: dir)
        #expect(sum == ResidentMemory(rss: 200 * 1024, rssAnon: 120 * 1024, rssFile: 80 * 1024, rssShmem: 0))
    }
}

/// process_madvise on this test process itself (no CAP_SYS_NICE needed for one's own
/// memory): the batching and skipping logic against what the kernel really does.
@Suite("ProcessMadvise.advise", .timeLimit(.minutes(5)))
struct ProcessMadviseTests {
    static let page = UInt64(sysconf(Int32(_SC_PAGESIZE)))

    /// An anonymous private mapping, unmapped at the end of `body`.
    func withMapping<R>(bytes: UInt64, flags: Int32 = 0, _ body: (UInt64) throws -> R) throws -> R {
        let p = mmap(nil, Int(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0)
        guard let p, p != MAP_FAILED else { throw SystemError("mmap") }
        defer { munmap(p, Int(bytes)) }
        return try body(UInt64(UInt(bitPattern: p)))
    }

    @Test("a range that is no longer mapped is skipped (ENOMEM) and the next one advised")
    func unmappedRangeIsSkipped() throws {
        let me = try ProcessHandle(adopting: getpid())
        try withMapping(bytes: 3 * Self.page) { base in
            // Punch out the middle page: the kernel refuses that range alone.
            munmap(UnsafeMutableRawPointer(bitPattern: UInt(base + Self.page)), Int(Self.page))
            let ranges = (0..<3).map { ProcessMadvise.Range(start: base + UInt64($0) * Self.page, length: Self.page) }
            let outcome = try ProcessMadvise.advise(pidfd: me.pidfd, pid: getpid(), ranges: ranges, advice: .cold)
            #expect(outcome.rangesAdvised == 2)
            #expect(outcome.rangesSkipped == 1)
            #expect(outcome.bytesAdvised == 2 * Self.page)
            #expect(!outcome.processExited)
        }
    }

    /// Why this process cannot mlock a page, or nil if it can: tried once on a page of its
    /// own (the kernel's answer, whatever RLIMIT_MEMLOCK, CAP_IPC_LOCK and memory already
    /// locked make of it).
    static let mlockUnavailable: String? = {
        guard let p = mmap(nil, Int(page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), p != MAP_FAILED else {
            return "mmap of one page failed (\(String(cString: strerror(errno))))"
        }
        defer { munmap(p, Int(page)) }
        guard mlock(p, Int(page)) == 0 else {
            return "mlock of one page fails here (\(String(cString: strerror(errno)))): needs CAP_IPC_LOCK or RLIMIT_MEMLOCK of a page"
        }
        munlock(p, Int(page))
        return nil
    }()

    @Test(
        "an mlocked range is refused (EINVAL) and skipped",
        .enabled(if: ProcessMadviseTests.mlockUnavailable == nil, "\(ProcessMadviseTests.mlockUnavailable ?? "")"))
    func lockedRangeIsSkipped() throws {
        let me = try ProcessHandle(adopting: getpid())
        try withMapping(bytes: 2 * Self.page) { base in
            let second = UnsafeMutableRawPointer(bitPattern: UInt(base + Self.page))
            try #require(mlock(second, Int(Self.page)) == 0, "mlock failed (\(String(cString: strerror(errno))))")
            defer { munlock(second, Int(Self.page)) }
            let ranges = [
                ProcessMadvise.Range(start: base + Self.page, length: Self.page),
                ProcessMadvise.Range(start: base, length: Self.page),
            ]
            let outcome = try ProcessMadvise.advise(pidfd: me.pidfd, pid: getpid(), ranges: ranges, advice: .pageout)
            #expect(outcome.rangesSkipped == 1)
            #expect(outcome.rangesAdvised == 1)
            #expect(outcome.bytesAdvised == Self.page)
        }
    }

    @Test("more ranges than IOV_MAX take several calls, every range advised once")
    func batchesOfIovMax() throws {
        let me = try ProcessHandle(adopting: getpid())
        let count = 2500
        try withMapping(bytes: UInt64(count) * Self.page) { base in
            let ranges = (0..<count).map { ProcessMadvise.Range(start: base + UInt64($0) * Self.page, length: Self.page) }
            let outcome = try ProcessMadvise.advise(pidfd: me.pidfd, pid: getpid(), ranges: ranges, advice: .cold)
            #expect(outcome.calls == 3)
            #expect(outcome.rangesAdvised == count)
            #expect(outcome.bytesAdvised == UInt64(count) * Self.page)
        }
    }

    @Test("a range past the kernel's 2 GiB cap per call is finished by the next call")
    func partialProgressInsideARangeIsResumed() throws {
        let me = try ProcessHandle(adopting: getpid())
        let size: UInt64 = 3 << 30  // reserved, never touched: nothing is allocated
        try withMapping(bytes: size, flags: MAP_NORESERVE) { base in
            let outcome = try ProcessMadvise.advise(
                pidfd: me.pidfd, pid: getpid(), ranges: [.init(start: base, length: size)], advice: .cold)
            #expect(outcome.rangesAdvised == 1)
            #expect(outcome.rangesSkipped == 0)
            #expect(outcome.bytesAdvised == size)
            #expect(outcome.calls == 2)
        }
    }
}

/// Compaction of a real, stopped process: a file mapping that the kernel can drop, and
/// anonymous memory that has nowhere to go on a host without swap.
@Suite(
    "Compactor", .serialized,
    .enabled(if: getuid() == 0 && ScriptChild.available, "needs root (process_madvise on another process) and python3"),
    .timeLimit(.minutes(5)))
struct CompactorTests {
    static let script = """
        import mmap, sys
        f = open(sys.argv[1], 'rb')
        m = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
        total = 0
        for i in range(0, len(m), 4096):
            total += m[i]
        anon = bytearray(16 << 20)
        for i in range(0, len(anon), 4096):
            anon[i] = 1
        print('ready', flush=True)
        import time
        time.sleep(3600)
        """

    /// A 64 MiB file of real (non-zero) data, written and fsynced: dirty page cache would not
    /// be reclaimed by MADV_PAGEOUT, which does not write back.
    func makeDataFile(in dir: String) -> String {
        let path = dir + "/data.bin"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        precondition(fd >= 0)
        let chunk = [UInt8](repeating: 0xa5, count: 1 << 20)
        for _ in 0..<64 { _ = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
        fsync(fd)
        close(fd)
        return path
    }

    @Test("pageout of a stopped child: the 64 MiB file mapping leaves RAM, anonymous memory stays")
    func pageoutDropsFilePages() throws {
        let dir = makeTemporaryDirectory("compact")
        defer { removeTree(dir) }
        let child = try ScriptChild(Self.script, arguments: [makeDataFile(in: dir)])
        defer { child.kill() }
        try #require(child.waitForLine("ready"), "the child never became ready")
        try #require(child.stop(), "the child did not stop")
        defer { child.resume() }

        let report = try Compactor.compact(pids: [child.pid], mode: .pageout, cgroup: nil)
        print(
            "pageout: \(report.method.rawValue), \(report.vmasAdvised) VMAs, \(SizeText.format(report.bytesAdvised)) advised, "
                + "\(report.rangesSkipped) skipped, \(DurationText.format(report.durationNanos)); RssFile "
                + "\(SizeText.format(report.before.rssFile)) → \(SizeText.format(report.after.rssFile)), RssAnon "
                + "\(SizeText.format(report.before.rssAnon)) → \(SizeText.format(report.after.rssAnon))")
        #expect(report.method == .processMadvise)
        #expect(report.mode == .pageout)
        #expect(report.processes == 1 && report.processesExited == 0)
        #expect(report.vmasAdvised > 0)
        #expect(report.before.rssFile >= 64 * ScriptChild.mebibyte)
        #expect(report.before.rssFile - min(report.after.rssFile, report.before.rssFile) >= 56 * ScriptChild.mebibyte)
        // No swap here: anonymous pages cannot be paged out, so they stay (give or take).
        #expect(report.before.rssAnon >= 16 * ScriptChild.mebibyte)
        #expect(report.after.rssAnon * 10 >= report.before.rssAnon * 9)
        #expect(report.rssFreed >= 56 * ScriptChild.mebibyte)

        // The app still works after the thaw: it faults back what it touches.
        child.resume()
        #expect(child.waitForState("S"))
    }

    @Test("cold only deactivates: the pages stay resident")
    func coldKeepsPages() throws {
        let dir = makeTemporaryDirectory("compact-cold")
        defer { removeTree(dir) }
        let child = try ScriptChild(Self.script, arguments: [makeDataFile(in: dir)])
        defer { child.kill() }
        try #require(child.waitForLine("ready"), "the child never became ready")
        try #require(child.stop(), "the child did not stop")
        defer { child.resume() }

        let report = try Compactor.compact(pids: [child.pid], mode: .cold, cgroup: nil)
        print(
            "cold: \(report.vmasAdvised) VMAs, \(SizeText.format(report.bytesAdvised)) advised, \(report.rangesSkipped) skipped, "
                + "\(DurationText.format(report.durationNanos)); RSS \(SizeText.format(report.before.rss)) → \(SizeText.format(report.after.rss))"
        )
        #expect(report.method == .processMadvise)
        #expect(report.mode == .cold)
        #expect(report.bytesAdvised >= 80 * ScriptChild.mebibyte)
        #expect(report.after.rssFile * 10 >= report.before.rssFile * 9)
    }

    @Test("a process that has exited is counted, not an error")
    func exitedProcess() throws {
        let child = try ScriptChild("pass")
        child.kill()
        let report = try Compactor.processMadvise(pids: [child.pid], mode: .pageout)
        #expect(report.processesExited == 1)
        #expect(report.processes == 0)
        #expect(report.bytesAdvised == 0)
    }

    @Test("without memory.reclaim in the cgroup, pageout falls back to process_madvise")
    func pickMethod() throws {
        let dir = makeTemporaryDirectory("compact-cg")
        defer { removeTree(dir) }
        let noController = Cgroup2(path: dir)
        #expect(!Compactor.canReclaim(noController))
        let report = try Compactor.compact(pids: [getpid()], mode: .cold, cgroup: noController)
        #expect(report.method == .processMadvise)
        writeFile(dir + "/memory.reclaim", "")
        #expect(Compactor.canReclaim(noController))
        // .cold cannot be expressed through memory.reclaim: still process_madvise.
        #expect(try Compactor.compact(pids: [getpid()], mode: .cold, cgroup: noController).method == .processMadvise)
    }

    @Test("memory.reclaim gets the cgroup's memory.current as the amount to reclaim")
    func memoryReclaimWritesTheCurrentCharge() throws {
        // A stand-in directory: this host's v2 tree has no memory controller.
        let dir = makeTemporaryDirectory("compact-reclaim")
        defer { removeTree(dir) }
        writeFile(dir + "/memory.current", "123456789\n")
        writeFile(dir + "/memory.reclaim", "")
        writeFile(dir + "/cgroup.procs", "\(getpid())\n")
        let report = try Compactor.compact(pids: [getpid()], mode: .pageout, cgroup: Cgroup2(path: dir))
        #expect(report.method == .memoryReclaim)
        #expect(report.bytesAdvised == 123_456_789)
        #expect(readFile(dir + "/memory.reclaim") == "123456789")
        #expect(report.processes == 1)
        #expect(!report.reclaimShort)
    }
}

// What only these tests read of a mapping and a report.
extension MemoryMapping {
    var isFileBacked: Bool { inode != 0 }
    var isDeleted: Bool { path.hasSuffix(" (deleted)") }
}

extension CompactionReport {
    var rssFreed: UInt64 { before.rss > after.rss ? before.rss - after.rss : 0 }
}

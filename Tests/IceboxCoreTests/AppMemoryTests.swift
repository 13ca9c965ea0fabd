import Glibc
import IceboxSystem
import IceboxTestSupport
import Testing

@testable import IceboxCore

@Suite("AppMemory parsing")
struct AppMemoryParsingTests {
    @Test func pssFromSmapsRollup() {
        let text = """
            55d0c7a8e000-7ffd1ca11000 ---p 00000000 00:00 0                          [rollup]
            Rss:               90112 kB
            Pss:               61234 kB
            Pss_Dirty:         20000 kB
            Pss_Anon:          20480 kB
            Pss_File:          40754 kB
            Pss_Shmem:             0 kB
            Shared_Clean:      30000 kB

            """
        #expect(AppMemory.pss(smapsRollup: text) == 61234 * 1024)
        #expect(AppMemory.pss(smapsRollup: "") == nil)
    }

    @Test("the source is memory.current, else memory.usage_in_bytes, else the Pss sum")
    func sourceOrder() {
        let dir = makeTemporaryDirectory("appmem")
        defer { removeTree(dir) }
        let v2 = dir + "/v2", v1 = dir + "/v1"
        mkdir(v2, 0o755)
        mkdir(v1, 0o755)
        writeFile(v1 + "/memory.usage_in_bytes", "2048\n")

        // The v2 cgroup without memory.current (no memory controller, as on this host): v1.
        #expect(AppMemory.read(v2Cgroup: v2, v1MemoryCgroup: v1, pids: []) == AppMemoryReading(bytes: 2048, source: .v1Usage))
        writeFile(v2 + "/memory.current", "1024\n")
        // Without a v1 memory cgroup (the controller on v2): memory.current.
        #expect(AppMemory.read(v2Cgroup: v2, v1MemoryCgroup: nil, pids: []) == AppMemoryReading(bytes: 1024, source: .memoryCurrent))
        // A v1 memory cgroup that cannot be read (removed): memory.current next.
        #expect(
            AppMemory.read(v2Cgroup: v2, v1MemoryCgroup: dir + "/gone", pids: []) == AppMemoryReading(bytes: 1024, source: .memoryCurrent))
        // Neither cgroup: the Pss of the processes (this test process has some).
        let pss = AppMemory.read(v2Cgroup: nil, v1MemoryCgroup: dir + "/missing", pids: [getpid()])
        #expect(pss.source == .pssSum)
        #expect(pss.bytes > 0)
        // A garbled counter falls through too.
        writeFile(v2 + "/memory.current", "lots\n")
        #expect(AppMemory.read(v2Cgroup: v2, v1MemoryCgroup: nil, pids: []) == AppMemoryReading(bytes: 0, source: .pssSum))
    }

    @Test func theReadingIsCodableWithTheSourceNamed() {
        let json = JSONLines.encode(AppMemoryReading(bytes: 7, source: .pssSum))
        #expect(json == #"{"bytes":7,"source":"smaps_rollup Pss"}"#)
        #expect(JSONLines.decode(AppMemoryReading.self, json) == AppMemoryReading(bytes: 7, source: .pssSum))
        #expect(MemorySource.memoryCurrent.rawValue == "memory.current")
        #expect(MemorySource.v1Usage.rawValue == "memory.usage_in_bytes")
    }
}

/// A real per-app v1 memory cgroup with a child that allocates ~50 MiB in it.
@Suite(
    "MemoryCgroupV1", .serialized,
    .enabled(
        if: getuid() == 0 && CgroupMounts.read().memoryV1 != nil && ScriptChild.available,
        "needs root, a cgroup v1 memory hierarchy and python3"),
    .enabled(
        if: CgroupMounts.read().memoryV1.flatMap(cgroupMountReadOnly) == nil,
        "\(CgroupMounts.read().memoryV1.flatMap(cgroupMountReadOnly) ?? "")"),
    .timeLimit(.minutes(5)))
struct MemoryCgroupV1Tests {
    @Test("usage counts the child's 50 MiB; the Pss sum is in the same ballpark")
    func usageOfAChild() throws {
        let cg = MemoryCgroupV1(path: CgroupMounts.read().memoryV1! + "/icebox-test-memory-\(getpid())")
        try cg.create()
        defer { try? cg.remove() }
        #expect(cg.exists)
        let procs = try cg.openProcsForWriting()
        defer { close(procs) }
        let child = try ScriptChild(
            """
            block = bytearray(50 << 20)
            for i in range(0, len(block), 4096):
                block[i] = 1
            print('ready', flush=True)
            import time
            time.sleep(3600)
            """, v1ProcsFD: procs)
        defer { child.kill() }
        try #require(child.waitForLine("ready"), "the child never became ready")
        #expect(cg.procs() == [child.pid])

        let usage = try cg.usage()
        let pss = AppMemory.pssSum(pids: [child.pid])
        print("v1 usage \(SizeText.format(usage)), Pss sum \(SizeText.format(pss))")
        #expect(usage >= 40 * ScriptChild.mebibyte)
        #expect(pss >= 40 * ScriptChild.mebibyte)
        #expect(pss <= usage * 2 && usage <= pss * 2, "usage \(usage) and Pss \(pss) should be within 2x")

        let reading = AppMemory.read(v2Cgroup: nil, v1MemoryCgroup: cg.path, pids: [child.pid])
        #expect(reading.source == .v1Usage)
        #expect(reading.bytes >= 40 * ScriptChild.mebibyte)

        child.kill()
        #expect(eventually { cg.procs().isEmpty })
        try cg.remove()
        #expect(!cg.exists)
    }

    @Test("a process added after it allocated keeps its old charge where it was")
    func addProcessMovesTheProcessOnly() throws {
        let cg = MemoryCgroupV1(path: CgroupMounts.read().memoryV1! + "/icebox-test-memory-add-\(getpid())")
        try cg.create()
        defer { try? cg.remove() }
        let child = try ScriptChild(
            """
            block = bytearray(32 << 20)
            for i in range(0, len(block), 4096):
                block[i] = 1
            print('ready', flush=True)
            import time
            time.sleep(3600)
            """)
        defer { child.kill() }
        try #require(child.waitForLine("ready"), "the child never became ready")
        try cg.addProcess(child.pid)
        #expect(cg.procs() == [child.pid])
        let usage = try cg.usage()
        print("v1 usage after a late addProcess: \(SizeText.format(usage))")
        #expect(usage < 32 * ScriptChild.mebibyte)
        child.kill()
        #expect(eventually { cg.procs().isEmpty })
    }
}

// The cgroup's usage counter, read the way AppMemory reads it.
extension MemoryCgroupV1 {
    func usage() throws -> UInt64 {
        try #require(FileIO.readCounter(file(Self.usageFile)), "\(file(Self.usageFile)) holds no counter")
    }
}

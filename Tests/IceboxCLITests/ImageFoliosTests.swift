import Foundation
import Glibc
import Testing

/// Every `icebox` process asks for its code in 2 MiB page-cache folios before it runs any
/// (CIceboxStart/image_folios.c), so the first command run from a binary whose pages were
/// dropped reads that code back in 2 MiB folios, not the 4 KiB pages the kernel's read-around
/// makes, and every later command maps it as after an install. Checked in the kernel's own
/// records: the advice in /proc/PID/smaps (VmFlags "hg"), and the folios themselves through
/// /proc/self/pagemap and /proc/kpageflags.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"))
struct ImageFoliosTests {
    static let chunk = 2 << 20
    static let page = 4096

    /// The executable PT_LOAD segment: its file range and its alignment, from the ELF program
    /// headers (64-bit, little-endian).
    static func codeSegment(_ fd: Int32) -> (range: Range<Int>, align: Int)? {
        func field(_ bytes: [UInt8], _ at: Int, _ size: Int) -> Int {
            bytes[at..<at + size].reversed().reduce(0) { $0 << 8 | Int($1) }
        }
        var header = [UInt8](repeating: 0, count: 64)
        guard pread(fd, &header, 64, 0) == 64, header[0] == 0x7f, header[4] == 2 else { return nil }
        let phoff = field(header, 32, 8), phentsize = field(header, 54, 2), phnum = field(header, 56, 2)
        var table = [UInt8](repeating: 0, count: phentsize * phnum)
        guard pread(fd, &table, table.count, off_t(phoff)) == table.count else { return nil }
        for i in 0..<phnum {
            let entry = Array(table[i * phentsize..<(i + 1) * phentsize])
            guard field(entry, 0, 4) == 1 /* PT_LOAD */ && field(entry, 4, 4) & 1 /* PF_X */ != 0 else { continue }
            let offset = field(entry, 8, 8), size = field(entry, 32, 8)
            return (offset..<offset + size, field(entry, 48, 8))
        }
        return nil
    }

    /// A copy of the binary whose pages are in no cache: written, synced, then dropped.
    static func uncachedCopy(of binary: String, in dir: String) throws -> String {
        let path = dir + "/icebox"
        try FileManager.default.copyItem(atPath: binary, toPath: path)
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0, "open \(path): \(String(cString: strerror(errno)))")
        defer { close(fd) }
        try #require(fsync(fd) == 0)
        try #require(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0)
        return path
    }

    /// How many pages of the file are in the page cache (mincore of a mapping of it).
    static func cachedPages(_ fd: Int32, size: Int) -> Int? {
        guard let map = mmap(nil, size, PROT_READ, MAP_SHARED, fd, 0), map != MAP_FAILED else { return nil }
        defer { munmap(map, size) }
        var vec = [UInt8](repeating: 0, count: (size + page - 1) / page)
        guard mincore(map, size, &vec) == 0 else { return nil }
        return vec.reduce(0) { $0 + Int($1 & 1) }
    }

    /// The 2 MiB stretches of `range` (whole, 2 MiB-aligned in the file) that the page cache
    /// holds in one 2 MiB folio. Only a stretch's first and last pages are touched here, by a
    /// mapping without advice: one that was not in the cache is read back in 4 KiB pages and
    /// does not count.
    static func wholeChunks(_ fd: Int32, size: Int, in range: Range<Int>) throws -> (whole: Int, of: Int) {
        let map = try #require(mmap(nil, size, PROT_READ, MAP_SHARED, fd, 0))
        try #require(map != MAP_FAILED)
        defer { munmap(map, size) }
        let pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)
        let kpageflags = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC)
        defer { close(pagemap); close(kpageflags) }
        try #require(pagemap >= 0 && kpageflags >= 0)
        func frame(_ offset: Int) -> UInt64? {
            let address = map + offset
            _ = address.load(as: UInt8.self)  // mapped now, from the page cache
            var entry: UInt64 = 0
            let at = off_t(Int(bitPattern: address) / page * 8)
            guard pread(pagemap, &entry, 8, at) == 8, entry >> 63 == 1 else { return nil }
            return entry & (1 << 55 - 1)
        }
        func flags(_ frame: UInt64) -> UInt64 {
            var value: UInt64 = 0
            return pread(kpageflags, &value, 8, off_t(frame * 8)) == 8 ? value : 0
        }
        let head: UInt64 = 1 << 15, tail: UInt64 = 1 << 16  // KPF_COMPOUND_HEAD, KPF_COMPOUND_TAIL
        var whole = 0, of = 0
        var start = (range.lowerBound + chunk - 1) / chunk * chunk
        while start + chunk <= range.upperBound {
            of += 1
            let first = try #require(frame(start), "no page frame for offset \(start)")
            let last = try #require(frame(start + chunk - page), "no page frame for offset \(start + chunk - page)")
            if last == first + UInt64(chunk / page - 1) && flags(first) & head != 0 && flags(last) & tail != 0 {
                whole += 1
            }
            start += chunk
        }
        return (whole, of)
    }

    /// The binary's code is 2 MiB-aligned, as the release build lays it out (which is also
    /// entered at icebox_entry, its first instruction: scripts/lib/setup.sh).
    static func releaseLayout(_ binary: String) -> Bool {
        let fd = open(binary, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return codeSegment(fd)?.align == chunk
    }

    @Test("an icebox process has advised its code mapping (VmFlags hg in /proc/PID/smaps)")
    func codeMappingAdvised() throws {
        let box = Sandbox()
        defer { box.close() }
        let launch = try box.icebox(["launch", "app", "--", "sleep", "1000"])
        #expect(launch.status == 0, "\(launch.output)")
        let daemon = try #require(box.daemonPID)
        var st = stat()
        try #require(stat(Sandbox.binary, &st) == 0)
        // smaps: a mapping's line (address perms offset dev inode path), then its fields.
        let smaps = try String(contentsOfFile: "/proc/\(daemon)/smaps", encoding: .utf8)
        var code: [String] = [], inCode = false
        for line in smaps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if let first = fields.first, first.contains("-"), fields.count >= 5, first.allSatisfy({ $0.isHexDigit || $0 == "-" }) {
                inCode = fields.count >= 6 && fields[1].contains("x") && UInt64(fields[4]) == UInt64(st.st_ino)
            } else if inCode, fields.first == "VmFlags:" {
                code.append(fields.dropFirst().joined(separator: " "))
            }
        }
        #expect(!code.isEmpty && code.allSatisfy { $0.split(separator: " ").contains("hg") }, "the code mappings' VmFlags: \(code)")
    }

    @Test(
        "the first command run from a dropped binary reads its code back in 2 MiB folios",
        .enabled(if: getuid() == 0, "reads physical frame numbers (/proc/self/pagemap): needs root"),
        .enabled(if: access("/proc/kpageflags", R_OK) == 0, "no /proc/kpageflags (CONFIG_PROC_PAGE_MONITOR)"),
        .enabled(
            if: releaseLayout(Sandbox.binary),
            "the binary under test is not laid out as the release build (2 MiB-aligned code, entered at icebox_entry): the debug build's dynamic linker reads its code before any hook runs; scripts/test runs this on the release build"
        ))
    func firstRunReadsCodeInWholeFolios() throws {
        let dir = Sandbox.temporaryDirectory("icebox-folios")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let copy = try Self.uncachedCopy(of: Sandbox.binary, in: dir)
        let fd = open(copy, O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        var st = stat()
        try #require(fstat(fd, &st) == 0)
        let size = Int(st.st_size)
        let before = try #require(Self.cachedPages(fd, size: size))
        try #require(before == 0, "\(before) pages of the copy were still cached after POSIX_FADV_DONTNEED")

        let p = Process()
        p.executableURL = URL(fileURLWithPath: copy)
        p.arguments = ["--version"]
        let run = try Sandbox.runToEnd(p, timeout: 30, what: "\(copy) --version")
        #expect(run.status == 0 && run.stdout.hasPrefix("icebox "), "\(run.output)")
        let code = try #require(Self.codeSegment(fd)?.range, "no executable segment in \(copy)")
        try #require(code.count >= 2 * Self.chunk, "the code (\(code.count) bytes) holds no whole 2 MiB stretch")

        // The stretches it ran code from (read then) are whole folios; without the advice the
        // kernel's read-around fills every one of them with 4 KiB pages (0 of N).
        let (whole, of) = try Self.wholeChunks(fd, size: size, in: code)
        #expect(whole >= 1, "\(whole) of the \(of) whole 2 MiB stretches of code are in one 2 MiB folio")
    }
}

import Glibc
import IceboxTestSupport
import Testing

@testable import IceboxSystem

@Suite("FileIO on temporary directories")
struct FileIOTests {
    @Test func writeAtomicallyThenReadRoundTrips() throws {
        let dir = makeTemporaryDirectory("fileio")
        defer { removeTree(dir) }
        let path = dir + "/registry.json"
        let text = "{\"apps\":[]}\nsecond line ✓ µs\n"
        try FileIO.writeAtomically(path, text)
        #expect(try FileIO.read(path) == text)
        #expect(readFile(path) == text)
    }

    @Test func writeAtomicallyReplacesAndLeavesNoTemporaryFile() throws {
        let dir = makeTemporaryDirectory("fileio")
        defer { removeTree(dir) }
        let path = dir + "/state"
        writeFile(path, "an old, much longer content than the new one\n")
        try FileIO.writeAtomically(path, "new")
        #expect(readFile(path) == "new")
        #expect(try FileIO.list(dir) == ["state"])
    }

    @Test func replaceHeadRewritesTheStartOfAFileWhoseTailIsUnchanged() throws {
        let dir = makeTemporaryDirectory("fileio")
        defer { removeTree(dir) }
        let path = dir + "/r.json"
        let tail = Array(#""options":{"env":"x"}}"#.utf8)
        func head(_ state: String) -> [UInt8] { Array(#"{"state":"\#(state)","#.utf8) }
        #expect(!FileIO.replaceHead(path, head: head("a"), tail: tail), "no file yet: the caller creates it")
        writeFile(path, #"{"state":"background",      "options":{"env":"x"}}"#)
        var before = stat()
        stat(path, &before)
        let region = 28  // what comes before the tail: {"state":"background", and six spaces
        #expect(FileIO.replaceHead(path, head: head("x"), tail: tail))
        #expect(
            readFile(path) == #"{"state":"x","# + String(repeating: " ", count: region - 13) + #""options":{"env":"x"}}"#,
            "padded up to the tail")
        var after = stat()
        stat(path, &after)
        #expect(after.st_ino == before.st_ino, "the same file, written in place")
        #expect(FileIO.replaceHead(path, head: head("suspended1234567"), tail: tail), "longer, up to the tail")
        #expect(readFile(path) == #"{"state":"suspended1234567","options":{"env":"x"}}"#)
        #expect(!FileIO.replaceHead(path, head: head("suspended12345678"), tail: tail), "no room before the tail")
        #expect(readFile(path) == #"{"state":"suspended1234567","options":{"env":"x"}}"#, "and nothing changed")
        // A file all in the first page is written whole, at the same length: another tail too.
        let other = Array(#""options":{"env":"y"}}"#.utf8)
        #expect(FileIO.replaceHead(path, head: head("x"), tail: other))
        #expect(readFile(path) == #"{"state":"x","# + String(repeating: " ", count: region - 13) + #""options":{"env":"y"}}"#)
        let unchanged = readFile(path)
        // Past the first page only the head is written, and only when the tail is there.
        let big = dir + "/big.json"
        let bigTail = Array((#""options":{"env":""# + String(repeating: "x", count: 5000) + #""}}"#).utf8)
        writeFile(big, #"{"state":"a","# + String(decoding: bigTail, as: UTF8.self))
        #expect(FileIO.replaceHead(big, head: head("b"), tail: bigTail))
        #expect(readFile(big) == #"{"state":"b","# + String(decoding: bigTail, as: UTF8.self))
        var changed = bigTail
        changed[changed.count - 4] = UInt8(ascii: "y")
        #expect(!FileIO.replaceHead(big, head: head("c"), tail: changed), "another tail")
        #expect(readFile(big) == #"{"state":"b","# + String(decoding: bigTail, as: UTF8.self), "and nothing changed")
        // A head region past the first page is not written in place: the kernel could stop
        // such a write between its pages.
        let wide = dir + "/wide.json"
        writeFile(wide, #"{"state":"a","# + String(repeating: " ", count: FileIO.headLimit) + String(decoding: tail, as: UTF8.self))
        #expect(!FileIO.replaceHead(wide, head: head("b"), tail: tail))
        // A link, or a file with a second name, is not written through.
        symlink(path, dir + "/link")
        #expect(!FileIO.replaceHead(dir + "/link", head: head("x"), tail: other))
        link(path, dir + "/second")
        #expect(!FileIO.replaceHead(path, head: head("z"), tail: other))
        #expect(readFile(path) == unchanged)
    }

    @Test func readCounterParsesADecimalFileRelativeToAKeptDirectory() throws {
        let dir = makeTemporaryDirectory("fileio")
        defer { removeTree(dir) }
        mkdir(dir + "/app", 0o755)
        writeFile(dir + "/app/memory.current", "123456\n")
        writeFile(dir + "/app/empty", "")
        writeFile(dir + "/app/words", "max\n")
        writeFile(dir + "/app/huge", "18446744073709551616\n")
        writeFile(dir + "/app/largest", "18446744073709551615\n")
        #expect(FileIO.readCounter(dir + "/app/memory.current") == 123456)
        #expect(FileIO.readCounter(dir + "/app/empty") == nil)
        #expect(FileIO.readCounter(dir + "/app/words") == nil)
        #expect(FileIO.readCounter(dir + "/app/huge") == nil, "past UInt64: nil, not a wrapped number")
        #expect(FileIO.readCounter(dir + "/app/largest") == UInt64.max)
        #expect(FileIO.readCounter(dir + "/app/missing") == nil)
        let root = try #require(DirectoryHandle(dir + "/"))
        #expect(root.relative(dir + "/app/memory.current") == "app/memory.current")
        #expect(root.relative("/elsewhere/app/memory.current") == nil)
        #expect(root.relative(dir + "x/app") == nil, "a sibling with the same prefix is not below it")
        #expect(DirectoryHandle.readCounter(dir + "/app/memory.current", under: [root]) == 123456)
        symlink(dir + "/app/memory.current", dir + "/app/link")
        #expect(DirectoryHandle.readCounter(dir + "/app/link", under: [root]) == nil, "a link is not followed")
        #expect(DirectoryHandle(dir + "/app/memory.current") == nil, "not a directory")
    }

    @Test func writeAtomicallyAppliesTheModeAndHandlesEmptyContent() throws {
        let dir = makeTemporaryDirectory("fileio")
        defer { removeTree(dir) }
        let path = dir + "/empty"
        try FileIO.writeAtomically(path, "")
        #expect(readFile(path) == "")
        #expect(fileMode(path) == 0o600)
        try FileIO.writeAtomically(dir + "/shared", "x", mode: 0o640)
        #expect(fileMode(dir + "/shared") == 0o640)
    }

    /// The attack on a directory someone else can write: links at the temporary file's old
    /// name (PATH.tmp.PID), at the file itself, and a directory that is a link.
    @Test func writeAtomicallyNeverWritesThroughALink() throws {
        let dir = makeTemporaryDirectory("fileio")
        defer { removeTree(dir) }
        let secret = dir + "/secret", path = dir + "/icebox.prom"
        writeFile(secret, "root only\n")
        chmod(secret, 0o600)
        symlink(secret, path + ".tmp.\(getpid())")
        try FileIO.writeAtomically(path, "metrics\n", mode: 0o644)
        #expect(readFile(secret) == "root only\n" && fileMode(secret) == 0o600)
        #expect(readFile(path) == "metrics\n")
        #expect(try FileIO.linkStatus(path)?.kind == .regular)

        // A link at the file itself is replaced, not written through.
        unlink(path)
        symlink(secret, path)
        try FileIO.writeAtomically(path, "again\n", mode: 0o644)
        #expect(readFile(secret) == "root only\n")
        #expect(try FileIO.linkStatus(path)?.kind == .regular)
        #expect(try FileIO.list(dir).sorted() == ["icebox.prom", "icebox.prom.tmp.\(getpid())", "secret"])

        // A directory that is a link (swapped in after the path was checked) is refused.
        mkdir(dir + "/elsewhere", 0o700)
        symlink(dir + "/elsewhere", dir + "/linked")
        #expect(throws: SystemError.self) { try FileIO.writeAtomically(dir + "/linked/icebox.prom", "x") }
        #expect(try FileIO.list(dir + "/elsewhere").isEmpty)
    }

    @Test func temporaryNamesAreUnpredictableAndTakenOnesAreSkipped() throws {
        let dir = makeTemporaryDirectory("fileio")
        defer { removeTree(dir) }
        let dirFD = try FileIO.openDirectory(dir)
        defer { close(dirFD) }
        var names = Set<String>()
        for _ in 0..<20 {
            let made = try FileIO.createExclusive(in: dirFD, directory: dir, beside: "f", mode: 0o600)
            close(made.fd)
            #expect(made.name.hasPrefix("f.tmp.") && made.name.count == "f.tmp.".count + 16)
            names.insert(made.name)
        }
        #expect(names.count == 20)
        let real = try #require(realpath(dir, nil))
        defer { free(real) }
        #expect(FileIO.resolvingDirectory(dir + "/x") == String(cString: real) + "/x")
        #expect(FileIO.resolvingDirectory(dir + "/missing/x") == nil)
        #expect(FileIO.resolvingDirectory(dir + "/") == nil)
    }

    @Test func writeAtomicallyIntoAMissingDirectoryThrows() {
        let dir = makeTemporaryDirectory("fileio")
        defer { removeTree(dir) }
        #expect(throws: SystemError.self) { try FileIO.writeAtomically(dir + "/missing/file", "x") }
    }

    @Test func readOfAMissingFileThrowsWithPathAndErrno() {
        let dir = makeTemporaryDirectory("fileio")
        defer { removeTree(dir) }
        let path = dir + "/nope"
        do {
            _ = try FileIO.read(path)
            Issue.record("read of a missing file did not throw")
        } catch {
            #expect(error.errno == ENOENT)
            #expect(error.path == path)
            #expect(error.description == "cannot read \(path): No such file or directory")
        }
    }

    @Test func readReadsMoreThanOneChunk() throws {
        let dir = makeTemporaryDirectory("fileio")
        defer { removeTree(dir) }
        let big = String(repeating: "0123456789abcdef", count: 2000)  // 32000 bytes > 8192
        writeFile(dir + "/big", big)
        #expect(try FileIO.read(dir + "/big") == big)
    }

    @Test func makeDirectoriesCreatesEveryLevelWithTheMode() throws {
        let dir = makeTemporaryDirectory("fileio")
        defer { removeTree(dir) }
        let deep = dir + "/a/b/c"
        try FileIO.makeDirectories(deep, mode: 0o700)
        #expect(isDirectoryOnDisk(dir + "/a"))
        #expect(isDirectoryOnDisk(deep))
        #expect(fileMode(deep) == 0o700)
        #expect(FileIO.isDirectory(deep))
        // Again: already there is fine.
        try FileIO.makeDirectories(deep)
        try FileIO.makeDirectories(dir + "/a/b/c/")
    }

    @Test func makeDirectoriesThroughAFileThrows() {
        let dir = makeTemporaryDirectory("fileio")
        defer { removeTree(dir) }
        writeFile(dir + "/file", "x")
        #expect(throws: SystemError.self) { try FileIO.makeDirectories(dir + "/file/sub") }
    }

    @Test func makeDirectoriesOnAnExistingFileThrows() {
        // mkdir -p fails with "File exists" when the last component is a regular file.
        let dir = makeTemporaryDirectory("fileio")
        defer { removeTree(dir) }
        writeFile(dir + "/file", "x")
        #expect(throws: SystemError.self) { try FileIO.makeDirectories(dir + "/file") }
    }

    @Test func listNamesEntriesWithoutDotAndDotDot() throws {
        let dir = makeTemporaryDirectory("fileio")
        defer { removeTree(dir) }
        #expect(try FileIO.list(dir) == [])
        writeFile(dir + "/one", "1")
        writeFile(dir + "/.hidden", "h")
        mkdir(dir + "/sub", 0o755)
        writeFile(dir + "/sub/nested", "n")
        #expect(try FileIO.list(dir).sorted() == [".hidden", "one", "sub"])
    }

    @Test func listOfAMissingDirectoryThrows() {
        #expect(throws: SystemError.self) { try FileIO.list("/nonexistent-icebox-unit-dir") }
    }

    @Test func existsAndIsDirectory() {
        let dir = makeTemporaryDirectory("fileio")
        defer { removeTree(dir) }
        writeFile(dir + "/f", "")
        #expect(FileIO.exists(dir + "/f"))
        #expect(!FileIO.isDirectory(dir + "/f"))
        #expect(FileIO.isDirectory(dir))
        #expect(!FileIO.exists(dir + "/g"))
        #expect(!FileIO.isDirectory(dir + "/g"))
    }

    @Test func writeWritesAControlFileValue() throws {
        let dir = makeTemporaryDirectory("fileio")
        defer { removeTree(dir) }
        writeFile(dir + "/cgroup.freeze", "0\n")
        try FileIO.write(dir + "/cgroup.freeze", "1")
        #expect(readFile(dir + "/cgroup.freeze")?.hasPrefix("1") == true)
        #expect(throws: SystemError.self) { try FileIO.write(dir + "/missing", "1") }
    }
}

@Suite struct InotifyParsingTests {
    /// Two `struct inotify_event` records as the kernel lays them out (host order).
    @Test func twoEvents() {
        func record(_ wd: UInt32, _ mask: UInt32, _ name: String, padTo: Int) -> [UInt8] {
            var bytes: [UInt8] = []
            for word in [wd, mask, 0, UInt32(padTo)] { withUnsafeBytes(of: word) { bytes += $0 } }
            let name = Array(name.utf8)
            return bytes + name + [UInt8](repeating: 0, count: padTo - name.count)
        }
        let bytes = record(1, 0x2, "events.jsonl", padTo: 16) + record(1, 0x8000, "", padTo: 0)
        #expect(
            Inotify.parse(bytes[...]) == [
                Inotify.Event(watch: 1, mask: 0x2, name: "events.jsonl"), Inotify.Event(watch: 1, mask: 0x8000, name: ""),
            ])
        #expect(Inotify.parse(bytes.prefix(20)).count == 0, "a truncated record is not decoded")
    }
}

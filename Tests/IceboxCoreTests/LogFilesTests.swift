import Foundation
import Glibc
import IceboxSystem
import IceboxTestSupport
import Testing

@testable import IceboxCore

/// The pieces of log rotation and reading, against real files: generations shifting (with the
/// gaps a crash leaves), lines read forward and backward, and the event log's own rotation.
@Suite struct LogFilesTests {
    func contents(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

    @Test("shift frees PATH.1, moves every generation up by one, drops what passes keep, and closes gaps in order")
    func shiftKeepsOrder() {
        let dir = makeTemporaryDirectory("shift")
        defer { removeTree(dir) }
        let log = LogGenerations(path: dir + "/events.jsonl")
        // A crash left a gap: 1, 3, 4 and a stray 9 (keep was larger once); 0-padded and
        // non-numeric names are not generations.
        for (n, text) in [(1, "newest"), (3, "middle"), (4, "older"), (9, "oldest")] { writeFile(log.generation(n), text) }
        writeFile(dir + "/events.jsonl.01", "not a generation")
        writeFile(dir + "/events.jsonl.bak", "not a generation")
        #expect(log.olderNumbers() == [1, 3, 4, 9])
        #expect(log.shift(keep: 4).isEmpty)
        #expect(log.olderNumbers() == [2, 3, 4])
        #expect([2, 3, 4].map { contents(log.generation($0)) } == ["newest", "middle", "older"])
        #expect(contents(dir + "/events.jsonl.01") == "not a generation")
        // keep 1: everything older goes.
        writeFile(log.generation(1), "current")
        #expect(log.shift(keep: 1).isEmpty)
        #expect(log.olderNumbers().isEmpty)
    }

    @Test("openOlder skips a file already open under another name (a rotation in between)")
    func openOlderSkipsSeen() {
        let dir = makeTemporaryDirectory("older")
        defer { removeTree(dir) }
        let log = LogGenerations(path: dir + "/a.log")
        for n in 1...3 { writeFile(log.generation(n), "\(n)\n") }
        let current = open(log.generation(1), O_RDONLY)
        defer { close(current) }
        let fds = log.openOlder(seen: [LogGenerations.inode(current)!])
        defer { for fd in fds { close(fd) } }
        let read = fds.map { fd -> String in
            var lines: [String] = []
            _ = LogLines.forward(fd: fd, from: 0) { lines.append(String(decoding: $0, as: UTF8.self)) }
            return lines.joined()
        }
        #expect(read == ["3", "2"])
    }

    @Test("lines forward stop before an unfinished line; backward hands newest first, across blocks and long lines")
    func forwardAndBackward() {
        let dir = makeTemporaryDirectory("lines")
        defer { removeTree(dir) }
        let path = dir + "/log"
        // Lines longer than the backward block (256 KiB) make it grow.
        let lines = (0..<3000).map { i in i % 1000 == 7 ? String(repeating: "x", count: 300_000) + "\(i)" : "line \(i)" }
        writeFile(path, lines.joined(separator: "\n") + "\npartial")
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        var forward: [String] = []
        let end = LogLines.forward(fd: fd, from: 0) { forward.append(String(decoding: $0, as: UTF8.self)) }
        #expect(forward == lines)
        #expect(end == Int64(lines.joined(separator: "\n").utf8.count + 1))
        var backward: [String] = []
        #expect(
            LogLines.backward(fd: fd, end: end) {
                backward.append(String(decoding: $0, as: UTF8.self)); return true
            })
        #expect(backward == lines.reversed())
        var firstFive: [String] = []
        #expect(
            !LogLines.backward(fd: fd, end: end) {
                firstFive.append(String(decoding: $0, as: UTF8.self)); return firstFive.count < 5
            })
        #expect(firstFive == Array(lines.suffix(5).reversed()))
    }

    @Test("a generation cut mid-line: forward with .final and backward hand over the same lines, the cut one included")
    func finalLineBothWays() throws {
        let dir = makeTemporaryDirectory("final")
        defer { removeTree(dir) }
        let path = dir + "/app.log.1"
        writeFile(path, "one\ntwo\nthree cut short")
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        let size = Int64(lseek(fd, 0, SEEK_END))
        var growing: [String] = []
        #expect(LogLines.forward(fd: fd, from: 0) { growing.append(String(decoding: $0, as: UTF8.self)) } == 8)
        #expect(growing == ["one", "two"], "a file being written: the unfinished line waits")
        var final: [String] = []
        #expect(LogLines.forward(fd: fd, from: 0, end: .final) { final.append(String(decoding: $0, as: UTF8.self)) } == size)
        var mapped: [String] = []
        #expect(LogLines.forwardMapped(fd: fd, from: 0, end: .final) { mapped.append(String(decoding: $0, as: UTF8.self)) } == size)
        var backward: [String] = []
        LogLines.backward(fd: fd, end: size) {
            backward.append(String(decoding: $0, as: UTF8.self)); return true
        }
        #expect(final == ["one", "two", "three cut short"])
        #expect(mapped == final)
        #expect(backward.reversed() == final)
        // A newline alone at the start of the next file (the rest of a write cut by the
        // rotation) is an empty line both ways too.
        writeFile(path, "\nfour\n")
        var lines: [String] = []
        _ = LogLines.forward(fd: fd, from: 0, end: .final) { lines.append(String(decoding: $0, as: UTF8.self)) }
        var back: [String] = []
        LogLines.backward(fd: fd, end: Int64(lseek(fd, 0, SEEK_END))) {
            back.append(String(decoding: $0, as: UTF8.self)); return true
        }
        #expect(lines == ["", "four"])
        #expect(back.reversed() == lines)
    }

    @Test("lastLineEnd: the end of the last whole line, past a line still being written, across blocks")
    func lastLineEnd() {
        let dir = makeTemporaryDirectory("lastline")
        defer { removeTree(dir) }
        let path = dir + "/app.log"
        let long = String(repeating: "y", count: 200_000)  // more than one 64 KiB block back
        for (text, expected) in [
            ("", 0), ("no newline", 0), ("a\n", 2), ("a\nb", 2), ("a\n" + long, 2), ("a\n" + long + "\n", 200_003),
        ] {
            writeFile(path, text)
            let fd = open(path, O_RDONLY)
            #expect(LogLines.lastLineEnd(fd: fd, end: Int64(text.utf8.count)) == Int64(expected), "\(text.prefix(12))")
            close(fd)
        }
    }

    @Test("the event log rotates after the line that reaches the size, keeping N generations, losing no line")
    func eventLogRotates() throws {
        let dir = makeTemporaryDirectory("eventlog")
        defer { removeTree(dir) }
        let log = EventLog(path: dir + "/events.jsonl", rotation: LogRotation(maxBytes: 1024, keep: 2))
        let line = String(repeating: "e", count: 99)  // 100 bytes with its newline
        for i in 0..<35 { try log.append("\(line.dropLast(3))\(String(format: "%03d", i))") }
        let generations = LogGenerations(path: log.path)
        #expect(generations.olderNumbers() == [1, 2])
        for n in [1, 2] { #expect(contents(generations.generation(n))?.utf8.count == 1100) }
        // 35 lines: 11 rotated three times (the first 11 dropped, keep 2), 2 in the current file.
        #expect(contents(log.path)?.split(separator: "\n").map { String($0.suffix(3)) } == ["033", "034"])
        #expect(contents(generations.generation(2))?.split(separator: "\n").first.map { String($0.suffix(3)) } == "011")
    }

    @Test("the event log stays open between lines, and a file removed or replaced behind it is noticed within a second")
    func eventLogKeptOpen() throws {
        let dir = makeTemporaryDirectory("eventlog-open")
        defer { removeTree(dir) }
        let log = EventLog(path: dir + "/events.jsonl", rotation: LogRotation(maxBytes: 0, keep: 2))
        func held() -> Int {
            ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).filter {
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0))?.hasPrefix(dir) == true
            }.count
        }
        try log.append("one")
        try log.append("two")
        #expect(held() == 1, "one descriptor, kept")
        #expect(contents(log.path) == "one\ntwo\n")
        // Removed by someone else: the lines go on to a new file at that path, at the latest
        // a second later (until then, to the removed one).
        try FileManager.default.removeItem(atPath: log.path)
        usleep(UInt32(EventLog.pathCheckIntervalNanos / 1000) + 100_000)
        try log.append("three")
        #expect(contents(log.path) == "three\n")
        #expect(held() == 1, "the removed file was let go")
        // Replaced by another file of that name: the same.
        try FileManager.default.moveItem(atPath: log.path, toPath: dir + "/moved")
        try "other\n".write(toFile: log.path, atomically: false, encoding: .utf8)
        usleep(UInt32(EventLog.pathCheckIntervalNanos / 1000) + 100_000)
        try log.append("four")
        #expect(contents(log.path) == "other\nfour\n")
        #expect(contents(dir + "/moved") == "three\n")
        log.closeFile()
        #expect(held() == 0)
    }

    @Test("the rotation settings refuse sizes below 1K and keeps outside 1...100, naming where the value came from")
    func rotationSettings() throws {
        #expect(try LogRotation.parseMaxBytes("8M", from: "--log-max-size") == 8 << 20)
        #expect(try LogRotation.parseMaxBytes("0", from: "--log-max-size") == 0)
        #expect(try LogRotation.parseMaxBytes("none", from: "--log-max-size") == 0)
        #expect(throws: IceboxError.self) { try LogRotation.parseMaxBytes("100", from: "--log-max-size") }
        do {
            _ = try LogRotation.parseKeep("0", from: "ICEBOX_LOG_KEEP")
            Issue.record("keep 0 accepted")
        } catch {
            #expect(error.code == .usage && error.description.contains("ICEBOX_LOG_KEEP"))
        }
    }
}

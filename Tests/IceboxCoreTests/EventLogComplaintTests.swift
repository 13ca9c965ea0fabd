import Glibc
import IceboxSystem
import IceboxTestSupport
import Testing

@testable import IceboxCore

/// A daemon that cannot write its event log says so on its stderr (daemon.log), once per
/// failing stretch, instead of losing the lines unseen.
@Suite struct EventLogComplaintTests {
    @Test func aFailingEventLogIsSaidOnceThenWorksAgain() throws {
        let dir = makeTemporaryDirectory("eventlog-complaint")
        defer { removeTree(dir) }
        let path = dir + "/state/events.jsonl"  // its directory does not exist yet: ENOENT
        let log = EventLog(path: path, rotation: LogRotation(maxBytes: 0, keep: 2))
        let pipe = try PipePair()
        defer {
            close(pipe.readEnd)
            close(pipe.writeEnd)
        }
        _ = fcntl(pipe.readEnd, F_SETFL, O_NONBLOCK)
        func said() -> String {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = read(pipe.readEnd, &buffer, buffer.count)
            return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : ""
        }
        log.appendOrComplain("one", complaints: pipe.writeEnd)
        log.appendOrComplain("two", complaints: pipe.writeEnd)
        let text = said()
        #expect(text.hasPrefix("icebox: cannot log events: cannot append to \(path): No such file or directory"), "\(text)")
        #expect(text.split(separator: "\n").count == 1, "said once for the stretch: \(text)")
        #expect(mkdir(dir + "/state", 0o700) == 0)
        log.appendOrComplain("three", complaints: pipe.writeEnd)
        #expect(said() == "")
        #expect(try FileIO.read(path) == "three\n")
    }
}

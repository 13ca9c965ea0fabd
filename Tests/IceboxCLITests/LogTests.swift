import Foundation
import Glibc
import IceboxCore
import Testing

@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct LogTests {
    @Test("log --follow prints events as they happen, even before the first daemon ran")
    func follow() throws {
        let box = Sandbox()
        defer { box.close() }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Sandbox.binary)
        p.arguments = ["log", "--follow", "--json", "watched"]
        p.environment = box.environment
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        defer { p.terminate(); p.waitUntilExit() }
        _ = try box.icebox(["launch", "watched", "--", "sleep", "1000"])
        _ = try box.icebox(["launch", "other", "--", "sleep", "1000"])
        _ = try box.icebox(["evict", "watched"])
        // Read until the eviction shows up, for at most 10 s.
        var text = ""
        let fd = out.fileHandleForReading.fileDescriptor
        let deadline = Date().addingTimeInterval(10)
        while !text.contains("\"event\":\"evict\"") && Date() < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 500) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            text += String(decoding: buffer[0..<n], as: UTF8.self)
        }
        let events = text.split(separator: "\n").compactMap { JSONLines.decode(Event.self, String($0)) }
        #expect(events.map(\.kind).starts(with: [.spawn, .ready]))
        #expect(events.contains { $0.kind == .evict && $0.durationNanos != nil }, "followed: \(text)")
        #expect(!events.contains { $0.app == "other" }, "log NAME shows only that app")
    }

    @Test("logs NAME shows a detached app's output; unknown names get a clear error")
    func appOutput() throws {
        let box = Sandbox()
        defer { box.close() }
        _ = try box.icebox(["launch", "talker", "--", "sh", "-c", "echo out; echo err >&2"])
        let deadline = Date().addingTimeInterval(5)
        while try box.apps()["talker"]?.state.isEnded != true && Date() < deadline { usleep(10_000) }
        let r = try box.icebox(["logs", "talker"])
        #expect(r.status == 0)
        #expect(r.stdout.contains("out") && r.stdout.contains("err"))
        let missing = try box.icebox(["logs", "nobody"])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("no output recorded for 'nobody'"))
        #expect(try box.apps()["talker"]?.exitStatus == 0)
    }
}

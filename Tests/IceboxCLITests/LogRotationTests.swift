import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

@testable import IceboxCLI

/// Bounded logs with a real daemon and real files: the event log rotates at the size it was
/// given and keeps that many generations; `icebox log` (all, NAME, -n) reads across them in
/// order; `log -f` keeps following across rotations; an app's output log rotates while the
/// app keeps writing; a line that cannot be read is skipped.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct LogRotationTests {
    static func lines(_ path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// Every line of a command's output, empty ones included.
    static func allLines(_ text: String) -> [String] {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        return lines
    }

    /// The number of one whole line of the writer app below ("line 00000042 " and 60 x), nil
    /// for anything else (a piece of a line cut at a rotation).
    static func writerNumber(_ line: String) -> Int? {
        let parts = line.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "line", parts[1].count == 8, parts[2] == String(repeating: "x", count: 60) else { return nil }
        return Int(parts[1])
    }

    static func size(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
    }

    /// Every line of the event log on disk, oldest generation first.
    static func eventLines(_ box: Sandbox) -> [String] {
        let log = LogGenerations(path: box.stateDir + "/events.jsonl")
        return (log.olderNumbers().reversed() + [0]).flatMap { lines(log.generation($0)) }
    }

    /// Waits (inotify on `directory`, with a deadline) until `condition` holds. When the
    /// kernel refuses this process an instance (the user's are shared with every other of
    /// their processes, a CI machine's too), it looks every 20 ms instead.
    static func wait(in directory: String, seconds: Double, _ condition: () -> Bool) throws -> Bool {
        // Refused (see above): nil, and the loop looks every 20 ms.
        let watcher = try? Inotify()
        try watcher?.addWatch(directory, mask: UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM))
        let deadline = Clock.monotonicNanos() + UInt64(seconds * 1e9)
        while !condition() {
            var pfd = [pollfd(fd: watcher?.fd ?? -1, events: Int16(POLLIN), revents: 0)]
            let until = watcher == nil ? min(deadline, Clock.monotonicNanos() + 20_000_000) : deadline
            if try Poll.wait(&pfd, until: until) == 0, Clock.monotonicNanos() >= deadline { return condition() }
            _ = try watcher?.read()
        }
        return true
    }

    /// `icebox ARGS` running in the background (a follower), its stdout piped; with
    /// `withoutInotify`, as `Sandbox.withoutInotify` runs it; its stderr to the file `stderr`.
    static func start(_ box: Sandbox, _ args: [String], withoutInotify: Bool = false, stderr: String? = nil) throws -> (
        Process, FileHandle
    ) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: withoutInotify ? HostLayoutWorld.unshare : Sandbox.binary)
        p.arguments = withoutInotify ? Sandbox.withoutInotify + [Sandbox.binary] + args : args
        p.environment = box.environment
        let out = Pipe()
        p.standardOutput = out
        if let stderr {
            _ = FileManager.default.createFile(atPath: stderr, contents: nil)
            p.standardError = FileHandle(forWritingAtPath: stderr)
        }
        try p.run()
        return (p, out.fileHandleForReading)
    }

    /// Reads `out` until what was read contains `wanted`, for at most `seconds`.
    static func read(_ out: FileHandle, until wanted: String, seconds: Double) throws -> String {
        var text = ""
        let deadline = Clock.monotonicNanos() + UInt64(seconds * 1e9)
        while !text.contains(wanted) {
            var pfd = [pollfd(fd: out.fileDescriptor, events: Int16(POLLIN), revents: 0)]
            guard try Poll.wait(&pfd, until: deadline) > 0 else { break }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let n = Glibc.read(out.fileDescriptor, &buffer, buffer.count)
            if n <= 0 { break }
            text += String(decoding: buffer[0..<n], as: UTF8.self)
        }
        return text
    }

    /// Suspends and resumes `app` (launched with --grace 0: frozen at once) `times` times:
    /// three events a cycle (notice, freeze, thaw).
    static func cycle(_ box: Sandbox, _ app: String, times: Int) throws {
        for _ in 0..<times {
            #expect(try box.icebox(["suspend", app]).status == 0)
            #expect(try box.icebox(["resume", app]).status == 0)
        }
    }

    @Test("the event log rotates at --log-max-size, keeps --log-keep generations, and log, log NAME and -n read across them")
    func eventLogRotates() throws {
        let box = Sandbox()
        defer { box.close() }
        #expect(try box.icebox(["daemon", "--log-max-size", "2K", "--log-keep", "3"]).status == 0)
        #expect(try box.icebox(["launch", "cycler", "--grace", "0", "--", "sleep", "1000"]).status == 0)
        #expect(try box.icebox(["launch", "other", "--grace", "0", "--", "sleep", "1000"]).status == 0)
        try Self.cycle(box, "cycler", times: 12)
        try Self.cycle(box, "other", times: 2)

        let log = LogGenerations(path: box.stateDir + "/events.jsonl")
        #expect(log.olderNumbers() == [1, 2, 3], "three older generations kept, the oldest dropped")
        for n in 1...3 {
            // Rotated right after the line that reached 2 KiB: never a line more.
            let size = Self.size(log.generation(n)) ?? 0
            let last = Self.lines(log.generation(n)).last?.utf8.count ?? 0
            #expect(size >= 2048 && size - last - 1 < 2048, "generation \(n): \(size) bytes")
        }
        #expect((Self.size(log.path) ?? 0) < 2048)

        let onDisk = Self.eventLines(box)
        let all = try box.icebox(["log", "--json"])
        #expect(all.status == 0)
        #expect(all.stdout.split(separator: "\n").map(String.init) == onDisk, "log reads the generations oldest first")
        let events = onDisk.compactMap { JSONLines.decode(Event.self, $0) }
        #expect(events.count == onDisk.count)
        #expect(zip(events, events.dropFirst()).allSatisfy { $0.monotonicNanos <= $1.monotonicNanos })

        // -n reaching back past the current file, with and without a name.
        let n = Self.lines(log.path).count + 4
        let tail = try box.icebox(["log", "--json", "-n", "\(n)"])
        #expect(tail.stdout.split(separator: "\n").map(String.init) == Array(onDisk.suffix(n)))
        let cyclerLines = zip(onDisk, events).filter { $0.1.app == "cycler" }.map(\.0)
        let named = try box.icebox(["log", "cycler", "--json", "-n", "\(n)"])
        #expect(named.stdout.split(separator: "\n").map(String.init) == Array(cyclerLines.suffix(n)))
        let allNamed = try box.icebox(["log", "cycler", "--json"])
        #expect(allNamed.stdout.split(separator: "\n").map(String.init) == cyclerLines)
        // The text form too: one line per event, in the same order.
        let text = try box.icebox(["log", "other"])
        #expect(text.stdout.split(separator: "\n").count == events.filter { $0.app == "other" }.count)
    }

    @Test("log --follow goes on across rotations: every event once, in order, including those of generations since dropped")
    func followAcrossRotation() throws {
        let box = Sandbox()
        defer { box.close() }
        #expect(try box.icebox(["daemon", "--log-max-size", "1K", "--log-keep", "2"]).status == 0)
        let (p, out) = try Self.start(box, ["log", "--follow", "--json"])
        defer { p.terminate(); p.waitUntilExit() }
        #expect(try box.icebox(["launch", "rolling", "--grace", "0", "--", "sleep", "1000"]).status == 0)
        try Self.cycle(box, "rolling", times: 10)
        let onDisk = Self.eventLines(box)
        let last = try #require(onDisk.last)
        let text = try Self.read(out, until: last, seconds: 10)
        let followed = text.split(separator: "\n").map(String.init)
        #expect(followed.suffix(onDisk.count) == onDisk[...], "the follower's last lines are the log on disk")
        #expect(Set(followed).count == followed.count, "no line twice")
        let events = followed.compactMap { JSONLines.decode(Event.self, $0) }
        #expect(events.count == followed.count)
        #expect(zip(events, events.dropFirst()).allSatisfy { $0.monotonicNanos <= $1.monotonicNanos }, "in order")
        // 10 cycles of three events, plus spawn and ready, all seen although most of them
        // have been rotated out of the kept generations.
        #expect(events.filter { $0.app == "rolling" }.count == 32, "\(events.map(\.kind))")
        #expect(events.first?.kind == .daemon)
        #expect(onDisk.count < followed.count)
    }

    @Test(
        "without inotify (the user's instances used up) log --follow says so and polls: every event once, in order, across rotations",
        .enabled(if: Sandbox.withoutInotifyRefusal == nil, "\(Sandbox.withoutInotifyRefusal ?? "")"))
    func followWithoutInotify() throws {
        let box = Sandbox()
        defer { box.close() }
        // Enough generations kept that none is dropped before a look (every 0.5 s) finds it.
        #expect(try box.icebox(["daemon", "--log-max-size", "1K", "--log-keep", "50"]).status == 0)
        // Launched first: a daemon with no app leaves after a second, and the next would not rotate.
        #expect(try box.icebox(["launch", "polled", "--grace", "0", "--", "sleep", "1000"]).status == 0)
        let err = box.dir + "/follow.err"
        let (p, out) = try Self.start(box, ["log", "--follow", "--json"], withoutInotify: true, stderr: err)
        defer { p.terminate(); p.waitUntilExit() }
        let said = try Self.wait(in: box.dir, seconds: 10) {
            ((try? String(contentsOfFile: err, encoding: .utf8)) ?? "").contains("instead")
        }
        let stderr = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        try #require(said && stderr.contains("cannot create an inotify instance") && stderr.contains("looking every 0.5 s"), "\(stderr)")
        try Self.cycle(box, "polled", times: 10)
        let onDisk = Self.eventLines(box)
        let last = try #require(onDisk.last)
        #expect(LogGenerations(path: box.stateDir + "/events.jsonl").olderNumbers().count > 2, "the event log rotated")
        let text = try Self.read(out, until: last, seconds: 10)
        let followed = text.split(separator: "\n").map(String.init)
        #expect(followed == onDisk, "the follower printed the log on disk, every line once, in order")
        #expect(p.isRunning, "still following")
    }

    @Test(
        "without inotify the daemon still rotates the apps' output logs, checking every second, and says so",
        .enabled(if: Sandbox.withoutInotifyRefusal == nil, "\(Sandbox.withoutInotifyRefusal ?? "")"))
    func appLogRotatesWithoutInotify() throws {
        let box = Sandbox()
        defer { box.close() }
        let started = try box.icebox(["daemon", "--log-max-size", "16K", "--log-keep", "2"], withoutInotify: true)
        try #require(started.status == 0, "\(started.output)")
        // About 70 KB a second: a rotation every quarter of a second were it watched.
        let script = "while :; do echo line-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; sleep 0.001; done"
        #expect(try box.icebox(["launch", "writer", "--backend", "signal", "--", "sh", "-c", script]).status == 0)
        let logs = box.stateDir + "/logs"
        let log = LogGenerations(path: logs + "/writer.log")
        let rotatedTwice = try Self.wait(in: logs, seconds: 20) { log.olderNumbers() == [1, 2] }
        #expect(rotatedTwice, "two rotations within 20 s: \(log.olderNumbers())")
        #expect(try box.icebox(["evict", "writer"]).status == 0)
        // Checked every second, each log stays well below the size plus a second of writing.
        for n in [0] + log.olderNumbers() { #expect((Self.size(log.generation(n)) ?? 0) < 16 << 10 + 200 << 10, "\(log.generation(n))") }
        let said = try box.icebox(["log"])
        #expect(said.stdout.contains("the apps' output logs are checked every second, not as they are written"), "\(said.stdout)")
        #expect(said.stdout.contains("cannot create an inotify instance"), "\(said.stdout)")
    }

    @Test("an app's output log rotates copy-truncate while the app keeps writing; logs reads across its generations")
    func appLogRotates() throws {
        let box = Sandbox()
        defer { box.close() }
        #expect(try box.icebox(["daemon", "--log-max-size", "16K", "--log-keep", "2"]).status == 0)
        // About 40 KB a second of numbered lines.
        let script =
            "import time\ni = 0\nwhile True:\n    print(f'line {i:08d} ' + 'x' * 60, flush=True)\n    i += 1\n    time.sleep(0.002)"
        #expect(try box.icebox(["launch", "writer", "--grace", "0", "--", "python3", "-c", script]).status == 0)
        // The follower writes to a file: into a pipe no one read until the end, it blocked once
        // the pipe was full (64 KiB, 1.6 s of this app) and missed rotations meanwhile, which
        // is the reader's loss, not the follower's (402 lines, on a loaded machine).
        let followedPath = box.dir + "/followed"
        try #require(FileManager.default.createFile(atPath: followedPath, contents: nil))
        let follower = Process()
        follower.executableURL = URL(fileURLWithPath: Sandbox.binary)
        follower.arguments = ["logs", "writer", "--follow"]
        follower.environment = box.environment
        follower.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: followedPath))
        try follower.run()
        defer { follower.terminate(); follower.waitUntilExit() }
        let logs = box.stateDir + "/logs"
        let log = LogGenerations(path: logs + "/writer.log")
        let rotatedTwice = try Self.wait(in: logs, seconds: 20) { log.olderNumbers() == [1, 2] }
        #expect(rotatedTwice, "two rotations within 20 s: \(log.olderNumbers())")
        // The app writes on into the truncated file, at its start (O_APPEND), not past a hole.
        let before = Self.lines(log.path).count
        #expect(try Self.wait(in: logs, seconds: 10) { Self.lines(log.path).count > before || log.olderNumbers().count > 2 })
        #expect(try box.apps()["writer"]?.state == .active)
        #expect(!(try String(contentsOfFile: log.path, encoding: .utf8)).hasPrefix("\0"), "no hole at the start")
        #expect(!FileManager.default.fileExists(atPath: log.generation(3)), "at most --log-keep generations")
        // Frozen, it writes nothing more: what logs prints holds still.
        #expect(try box.icebox(["suspend", "writer"]).status == 0)
        let r = try box.icebox(["logs", "writer"])
        #expect(r.status == 0)
        let allLines = Self.allLines(r.stdout)
        let numbers = allLines.compactMap(Self.writerNumber)
        // A write the rotation's copy caught half done is cut in two, its pieces the end
        // of one generation and the start of the next (as logrotate's copytruncate cuts it):
        // at most one line at each of the two generation boundaries.
        #expect(
            allLines.count - numbers.count <= 4,
            "only whole lines, but for a write cut at a rotation: \(allLines.filter { Self.writerNumber($0) == nil })")
        #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "in order across the generations")
        // Lines lost at a rotation: only those written between the copy's end and the
        // truncation, a handful at most.
        let missing = (numbers.last ?? 0) - (numbers.first ?? 0) + 1 - numbers.count
        #expect(missing <= 10, "\(missing) lines missing")
        #expect(numbers.count > 16 * 1024 / 80, "more than one file's worth")
        // logs --follow went on through the truncations: the same lines, in order.
        let lastLine = try #require(r.stdout.split(separator: "\n").last.map(String.init))
        let followedText = { (try? String(contentsOfFile: followedPath, encoding: .utf8)) ?? "" }
        #expect(Scenario.eventually(seconds: 10) { followedText().contains(lastLine) }, "logs --follow reached the last line")
        let seen = followedText().split(separator: "\n")
        let seenNumbers = seen.map(String.init).compactMap(Self.writerNumber)
        #expect(seen.last.map(String.init) == lastLine)
        #expect(zip(seenNumbers, seenNumbers.dropFirst()).allSatisfy { $0 < $1 }, "followed in order")
        #expect((seenNumbers.last ?? 0) - (seenNumbers.first ?? 0) + 1 - seenNumbers.count <= 10, "followed without losing lines")
        // -n reaching back into PATH.1 reads the same lines as the whole read, an empty one
        // or a cut one included: newline-terminated lines, counted as logs counts them.
        let current = try String(contentsOfFile: log.path, encoding: .utf8).utf8.filter { $0 == 10 }.count
        let tail = try box.icebox(["logs", "writer", "-n", "\(current + 5)"])
        #expect(Self.allLines(tail.stdout) == Array(allLines.suffix(current + 5)))
    }

    @Test(
        "an app that writes its output as fast as it can: no generation of its log holds more than --log-max-size plus the larger of it and 4 MiB, and the drop is logged"
    )
    func appLogFloodIsBounded() throws {
        let box = Sandbox()
        defer { box.close() }
        #expect(try box.icebox(["daemon", "--log-max-size", "1M", "--log-keep", "2"]).status == 0)
        // Hundreds of MB a second into its log (before: a 940 MB generation under an 8 MiB size).
        #expect(try box.icebox(["launch", "firehose", "--", "sh", "-c", "exec yes 0123456789abcdefghijklmnopqrstuvwxyz"]).status == 0)
        let logs = box.stateDir + "/logs"
        let log = LogGenerations(path: logs + "/firehose.log")
        // Watched while it writes: a generation is never more than the bound, at any moment.
        var largest = 0
        let until = Date().addingTimeInterval(3)
        while Date() < until {
            for n in log.olderNumbers() { largest = max(largest, Self.size(log.generation(n)) ?? 0) }
            usleep(20_000)
        }
        #expect(try box.icebox(["terminate", "firehose"]).status == 0)
        for n in log.olderNumbers() { largest = max(largest, Self.size(log.generation(n)) ?? 0) }
        #expect(!log.olderNumbers().isEmpty, "it was rotated")
        // The bound: the size plus the larger of the size and 4 MiB.
        #expect(largest <= 5 << 20, "a generation of \(largest) bytes under --log-max-size 1M")
        #expect(
            box.events("firehose").contains { $0.detail.hasPrefix("its output log grew faster than it is rotated: kept the newest") },
            "\(box.events("firehose").map(\.detail))")
    }

    @Test(
        "an app log cut mid-line at a rotation: logs, logs -n and logs -n -f read the same lines; a line being written waits for its newline"
    )
    func appLogCutMidLine() throws {
        let box = Sandbox()
        defer { box.close() }
        let logs = box.stateDir + "/logs"
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        let log = LogGenerations(path: logs + "/cut.log")
        // The rotation's copy caught a write half done: PATH.1 ends without a newline, the
        // newline that ended it starts the current file, whose last line is still being written.
        try "a\nb\nc cut".write(toFile: log.generation(1), atomically: false, encoding: .utf8)
        try "\nd\npart".write(toFile: log.path, atomically: false, encoding: .utf8)
        let all = try box.icebox(["logs", "cut"])
        #expect(all.status == 0, "\(all.stderr)")
        #expect(all.stdout == "a\nb\nc cut\n\nd\n")
        for n in 1...5 {
            let tail = try box.icebox(["logs", "cut", "-n", "\(n)"])
            #expect(tail.stdout == ["a", "b", "c cut", "", "d"].suffix(n).map { $0 + "\n" }.joined(), "-n \(n)")
        }
        // Followed from the end of the last whole line: the line being written comes out whole.
        let (p, out) = try Self.start(box, ["logs", "cut", "-n", "1", "--follow"])
        defer { p.terminate(); p.waitUntilExit() }
        #expect(try Self.read(out, until: "d\n", seconds: 10) == "d\n")
        let fd = open(log.path, O_WRONLY | O_APPEND)
        #expect(write(fd, "ial\ne\n", 6) == 6)
        close(fd)
        #expect(try Self.read(out, until: "e\n", seconds: 10) == "partial\ne\n")
    }

    @Test("a truncated or garbled line in a generation is skipped; gaps in the numbers and odd but valid lines are read")
    func malformedLinesSkipped() throws {
        let box = Sandbox()
        defer { box.close() }
        try FileManager.default.createDirectory(atPath: box.stateDir, withIntermediateDirectories: true)
        let log = LogGenerations(path: box.stateDir + "/events.jsonl")
        func line(_ app: String, _ kind: EventKind, _ detail: String) -> String {
            JSONLines.encode(Event(app: app, pid: 7, kind: kind, from: .active, to: .background, detail: detail, at: .read()))
        }
        let oldest = line("x", .spawn, "oldest")
        let a = line("x", .notice, "a")
        let escaped = line("x", .freeze, "said \"hi\"\tand\\left")  // escapes: the decoder's fallback
        let reordered =
            #"{"event":"thaw","time":"2026-11-30T12:00:00.000001Z","app":"x","monotonic_ns":5,"detail":"keys in another order"}"#
        let other = line("y", .ready, "another app")
        let c = line("x", .exit, "c")
        let generations: [(Int, [String])] = [
            (7, [oldest]),
            (2, [a, String(a.prefix(40)), "not json at all", escaped, "{}", reordered, "{\"app\":\"x\",\"event\":\"nope\"}"]),
            (0, [other, c, String(c.prefix(25))]),  // the last line cut short, with no newline
        ]
        for (n, lines) in generations {
            try (lines.joined(separator: "\n") + (n == 0 ? "" : "\n")).write(toFile: log.generation(n), atomically: false, encoding: .utf8)
        }
        let all = try box.icebox(["log", "--json"])
        #expect(all.status == 0, "\(all.stderr)")
        #expect(all.stdout.split(separator: "\n").map(String.init) == [oldest, a, escaped, reordered, other, c])
        let x = try box.icebox(["log", "x", "--json"])
        #expect(x.stdout.split(separator: "\n").map(String.init) == [oldest, a, escaped, reordered, c])
        let lastThree = try box.icebox(["log", "x", "--json", "-n", "3"])
        #expect(lastThree.stdout.split(separator: "\n").map(String.init) == [escaped, reordered, c])
        let text = try box.icebox(["log", "x"])
        #expect(text.status == 0)
        #expect(text.stdout.contains("said \"hi\"\tand\\left") && text.stdout.contains("keys in another order"))
    }

    @Test("icebox log reads every event of the log as JSONDecoder reads it")
    func readerAgreesWithDecoder() throws {
        var samples: [Event] = []
        for kind in EventKind.allCases {
            var e = Event(
                app: "web-\(kind.rawValue)", pid: 42, kind: kind, from: .suspended, to: .active, durationNanos: 1234, detail: "→ µs ok",
                at: .read())
            e.exitStatus = kind == .exit ? 143 : nil
            e.pids = [1, 2, 3]
            e.evictedFor = kind == .evict ? .budget : nil
            e.reason = "READY=1"
            e.backend = .cgroup2
            samples.append(e)
            samples.append(Event(app: "-", pid: nil, kind: kind, detail: "", at: .read()))
        }
        for event in samples {
            let line = JSONLines.encode(event)
            let read = Array(line.utf8).withUnsafeBytes { JSONLines.decode(Event.self, bytes: $0) }
            #expect(read == event, "\(line)")
            #expect(try JSONLines.decodeWithFoundation(Event.self, line) == event, "\(line)")
        }
        let escaped = #"{"app":"a\"b","detail":"","event":"spawn","monotonic_ns":1,"time":"t"}"#
        #expect(Array(escaped.utf8).withUnsafeBytes { JSONLines.decode(Event.self, bytes: $0) }?.app == "a\"b")
        for malformed in ["{\"app\":", "", "[]"] {
            #expect(Array(malformed.utf8).withUnsafeBytes { JSONLines.decode(Event.self, bytes: $0) } == nil, "\(malformed)")
        }
    }

    @Test("the daemon refuses a log size below 1K or a keep outside 1...100 (exit 64), from an option or the environment")
    func badSettings() throws {
        let box = Sandbox()
        defer { box.close() }
        let small = try box.icebox(["daemon", "--foreground", "--log-max-size", "100"])
        #expect(small.status == 64 && small.stderr.contains("--log-max-size"), "\(small.stderr)")
        let keep = try box.icebox(["daemon", "--foreground"], extraEnv: ["ICEBOX_LOG_KEEP": "0"])
        #expect(keep.status == 64 && keep.stderr.contains("ICEBOX_LOG_KEEP"), "\(keep.stderr)")
    }
}

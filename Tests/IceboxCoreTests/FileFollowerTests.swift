import Glibc
import IceboxTestSupport
import Testing

@testable import IceboxCore

/// A follower sees the log only when it looks: at each `takeNotifications`, through the
/// inotify events queued since (all at once, after any number of rotations) or, when it polls
/// (inotify refused: `FileFollower.polls`), at what the path holds then. Here the files change
/// by hand between looks, as `EventLog` changes them (the older generations move up, then the
/// current file becomes PATH.1, and the next line starts a new file); each test runs both ways
/// where both must agree.
struct FileFollowerTests {
    final class Log {
        let dir: String
        let generations: LogGenerations
        var next = 0

        init() {
            dir = makeTemporaryDirectory("follower")
            generations = LogGenerations(path: dir + "/events.jsonl")
        }

        deinit { removeTree(dir) }

        /// Appends `count` numbered lines to the current file (made if missing); returns them.
        @discardableResult
        func append(_ count: Int) -> [String] {
            let lines = (0..<count).map { _ in
                next += 1
                return "line \(next)"
            }
            let fd = open(generations.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
            precondition(fd >= 0)
            let text = lines.map { $0 + "\n" }.joined()
            _ = text.withCString { write(fd, $0, strlen($0)) }
            close(fd)
            return lines
        }

        /// The current file becomes PATH.1, keeping `keep` older ones; no new file yet.
        func rotate(keep: Int = 50) {
            precondition(generations.shift(keep: keep).isEmpty)
            precondition(rename(generations.path, generations.generation(1)) == 0)
        }
    }

    /// Every line the follower hands over at one look.
    static func look(_ follower: FileFollower) throws -> (lines: [String], following: Bool) {
        var lines: [String] = []
        let following = try follower.takeNotifications { lines.append($0) }
        return (lines, following)
    }

    static func follower(_ log: Log, poll: Bool) throws -> FileFollower {
        let follower = try FileFollower(path: log.generations.path, startAtEnd: true, follow: true, missingIsEmpty: true, poll: poll)
        #expect(follower.polls == poll && follower.pollingBecause == nil && (follower.notificationDescriptor == nil) == poll)
        return follower
    }

    @Test("lines appended between looks, then several rotations between two looks: every line once, in order", arguments: [false, true])
    func severalRotationsBetweenLooks(poll: Bool) throws {
        let log = Log()
        log.append(3)
        let follower = try Self.follower(log, poll: poll)
        var expected = log.append(2)
        #expect(try Self.look(follower) == (expected, true))
        expected = log.append(1)
        for _ in 0..<4 {
            log.rotate()
            expected += log.append(3)
        }
        #expect(try Self.look(follower) == (expected, true))
        #expect(try Self.look(follower) == ([], true))
    }

    @Test(
        "started while no current file exists (just rotated): the generations made before the first look are read first",
        arguments: [false, true])
    func startedBetweenRotationAndNextFile(poll: Bool) throws {
        let log = Log()
        log.append(3)
        log.rotate()
        let follower = try Self.follower(log, poll: poll)
        var expected = log.append(2)
        log.rotate()
        expected += log.append(2)
        log.rotate()
        expected += log.append(1)
        #expect(try Self.look(follower) == (expected, true))
    }

    @Test("rotated and the next file not made yet: the rest of the old one now, the new one at a later look", arguments: [false, true])
    func rotatedNotYetMadeAgain(poll: Bool) throws {
        let log = Log()
        let follower = try Self.follower(log, poll: poll)
        var expected = log.append(2)
        #expect(try Self.look(follower) == (expected, true))
        expected = log.append(1)
        log.rotate()
        #expect(try Self.look(follower) == (expected, true))
        #expect(try Self.look(follower) == ([], true))
        expected = log.append(2)
        #expect(try Self.look(follower) == (expected, true))
    }

    /// Polling only: told at once (inotify), a file of ours not among the generations was moved
    /// elsewhere, not dropped, and the generations there were read before it.
    @Test("polling, more rotations between two looks than are kept: what is left is read, in order, nothing twice")
    func rotationsPastTheKept() throws {
        let poll = true
        let log = Log()
        let follower = try Self.follower(log, poll: poll)
        let first = log.append(1)
        #expect(try Self.look(follower).lines == first)
        var all: [String] = []
        for _ in 0..<5 {
            all += log.append(2)
            log.rotate(keep: 2)
        }
        all += log.append(1)
        // The rest of the file it holds (removed, but open), then what is left: .2, .1 (the last
        // two rotated) and the current file. The three between were dropped unseen.
        #expect(try Self.look(follower) == (Array(all.prefix(2) + all.suffix(5)), true))
    }

    @Test("the log removed: the rest is read and the follow is over, as with inotify's IN_DELETE", arguments: [false, true])
    func removed(poll: Bool) throws {
        let log = Log()
        log.append(1)
        let follower = try Self.follower(log, poll: poll)
        let expected = log.append(2)
        #expect(unlink(log.generations.path) == 0)
        let seen = try Self.look(follower)
        #expect(seen.lines == expected && !seen.following, "\(seen)")
    }

    @Test("follow(stopOn:) returns when a stop descriptor fires, having printed what came", arguments: [false, true])
    func followStops(poll: Bool) throws {
        let log = Log()
        let follower = try Self.follower(log, poll: poll)
        let expected = log.append(2)
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        #expect(write(fds[1], "x", 1) == 1)
        var lines: [String] = []
        let stopped = try follower.follow(stopOn: [pollfd(fd: fds[0], events: Int16(POLLIN), revents: 0)]) { lines.append($0) }
        #expect(stopped == 0 && lines == expected)
    }
}

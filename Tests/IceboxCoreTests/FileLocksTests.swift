import Glibc
import IceboxCore
import IceboxSystem
import IceboxTestSupport
import Testing

@Suite("FileLocks.parse and contended")
struct FileLocksParsingTests {
    static let text = """
        1: POSIX  ADVISORY  WRITE 1234 00:1f:5678 0 EOF
        1: -> POSIX  ADVISORY  WRITE 4321 00:1f:5678 0 EOF
        1:  -> POSIX  ADVISORY  WRITE 4400 00:1f:5678 0 EOF
        2: FLOCK  ADVISORY  WRITE 99 fd:01:1311 0 EOF
        3: OFDLCK ADVISORY  READ  -1 fd:01:77 100 199
        4: LEASE  ACTIVE    READ 812 fd:01:1400 0 EOF
        5: POSIX  ADVISORY  READ 1234 fd:01:2000 10 20
        6: FLOCK  ADVISORY  WRITE 1235 fd:01:3000 0 EOF
        6: -> FLOCK  ADVISORY  WRITE 1234 fd:01:3000 0 EOF
        7: DELEG  BREAKING  READ 0 00:2a:9 0 EOF
        8: POSIX  *NOINODE* WRITE 55 <none>:0 0 EOF

        """

    @Test func holdersAndWaiters() {
        let locks = FileLocks.parse(Self.text)
        #expect(locks.count == 11)
        #expect(
            locks[0]
                == FileLock(
                    id: 1, kind: .posix, mode: "ADVISORY", access: .write, pid: 1234, device: "00:1f", inode: 5678, start: 0,
                    end: nil, isWaiter: false))
        #expect(locks[1].isWaiter && locks[1].pid == 4321 && locks[1].id == 1)
        // A waiter on a waiter is indented further but parsed the same.
        #expect(locks[2].isWaiter && locks[2].pid == 4400)
    }

    @Test func everyKind() {
        let locks = FileLocks.parse(Self.text)
        #expect(locks.map(\.kind) == [.posix, .posix, .posix, .flock, .ofd, .lease, .posix, .flock, .flock, .delegation, .posix])
        #expect(locks[4].pid == -1 && locks[4].access == .read && locks[4].start == 100 && locks[4].end == 199)
        #expect(locks[5].mode == "ACTIVE")
        #expect(locks[9].mode == "BREAKING")
        #expect(locks[10].mode == "*NOINODE*" && locks[10].device == "<none>" && locks[10].inode == 0)
        #expect(locks[3].device == "fd:01" && locks[3].inode == 1311)
    }

    @Test func malformedLinesAreSkipped() {
        let text = """
            garbage
            x: POSIX  ADVISORY  WRITE 1 00:1f:5678 0 EOF
            1: POSIX  ADVISORY  WRITE 1 00:1f:5678 0
            1: MAGIC  ADVISORY  WRITE 1 00:1f:5678 0 EOF
            1: POSIX  ADVISORY  WRITTEN 1 00:1f:5678 0 EOF
            1: POSIX  ADVISORY  WRITE 1 00:1f:5678 0 later
            2: FLOCK  ADVISORY  WRITE 99 fd:01:1311 0 EOF
            """
        #expect(FileLocks.parse(text).map(\.id) == [2])
        #expect(FileLocks.parse("").isEmpty)
    }

    @Test("a lock held by the app that another process waits on is contended")
    func contended() {
        let locks = FileLocks.parse(Self.text)
        let hits = FileLocks.contended(heldBy: [1234], in: locks)
        #expect(hits.count == 1)
        #expect(hits.first?.holder == locks[0])
        #expect(hits.first?.waiters.map(\.pid) == [4321, 4400])
        // Lock 5 (pid 1234) has no waiters; lock 6 is one 1234 waits on, not one it holds.
        #expect(FileLocks.contended(heldBy: [1235], in: locks).map(\.holder.id) == [6])
    }

    @Test("waiters from the app itself do not count: they are frozen with it")
    func waitersInsideTheAppAreIgnored() {
        let locks = FileLocks.parse(Self.text)
        #expect(FileLocks.contended(heldBy: [1235, 1234], in: locks).map(\.holder.id) == [1])
        #expect(FileLocks.contended(heldBy: [1234, 4321, 4400], in: locks).isEmpty)
        #expect(FileLocks.contended(heldBy: [], in: locks).isEmpty)
    }

    @Test("a waiter line for another file under the same id is not a waiter on this lock")
    func waiterMustMatchTheFile() {
        let text = """
            1: POSIX  ADVISORY  WRITE 10 00:1f:5678 0 EOF
            1: -> POSIX  ADVISORY  WRITE 11 00:1f:9999 0 EOF
            """
        #expect(FileLocks.contended(heldBy: [10], in: FileLocks.parse(text)).isEmpty)
    }

    @Test func thisHostsLocksParse() throws {
        let text = try FileIO.read(FileLocks.path)
        let lines = text.split(separator: "\n").count
        #expect(FileLocks.parse(text).count == lines)
    }
}

/// A stopped process holding a lock, and another blocked on it: what a frozen app holding a
/// lock looks like to icebox.
@Suite("FileLocks on real processes", .serialized, .enabled(if: ScriptChild.available, "needs python3"), .timeLimit(.minutes(5)))
struct FileLocksIntegrationTests {
    /// How each flavour takes an exclusive lock on the whole file, blocking.
    static let take = [
        "flock": "fcntl.flock(f, fcntl.LOCK_EX)",
        "lockf": "fcntl.lockf(f, fcntl.LOCK_EX)",
    ]

    @Test("a stopped holder with a blocked waiter is reported", arguments: ["flock", "lockf"])
    func stoppedHolder(flavour: String) throws {
        let dir = makeTemporaryDirectory("locks")
        defer { removeTree(dir) }
        let path = dir + "/lockfile"
        writeFile(path, "")
        let script = """
            import fcntl, sys, time
            f = open(sys.argv[1], 'r+')
            print('taking', flush=True)
            \(Self.take[flavour]!)
            print('locked', flush=True)
            time.sleep(3600)
            """
        let holder = try ScriptChild(script, arguments: [path])
        defer { holder.kill() }
        try #require(holder.waitForLine("locked"), "the holder never took the lock")
        try #require(holder.stop(), "the holder did not stop")

        let waiter = try ScriptChild(script, arguments: [path])
        defer { waiter.kill() }
        try #require(waiter.waitForLine("taking"))
        var hits: [(holder: FileLock, waiters: [FileLock])] = []
        let seen = eventually {
            hits = FileLocks.contended(heldBy: [holder.pid], in: (try? FileLocks.read()) ?? [])
            return !hits.isEmpty
        }
        try #require(seen, "no contended lock in /proc/locks:\n\((try? FileIO.read(FileLocks.path)) ?? "")")
        #expect(hits.count == 1)
        let hit = try #require(hits.first)
        #expect(hit.holder.pid == holder.pid)
        #expect(hit.holder.kind == (flavour == "flock" ? .flock : .posix))
        #expect(hit.holder.access == .write)
        #expect(hit.waiters.map(\.pid) == [waiter.pid])

        var st = stat()
        #expect(stat(path, &st) == 0)
        #expect(hit.holder.inode == UInt64(st.st_ino))
        // The waiter is not a holder of anything contended.
        #expect(FileLocks.contended(heldBy: [waiter.pid], in: try FileLocks.read()).isEmpty)

        // Killing the holder releases the lock: the waiter gets it.
        holder.kill()
        #expect(waiter.waitForLine("locked"))
    }
}

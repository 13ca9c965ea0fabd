import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// A command that arrives while the last daemon is on its way out: between removing its
/// control socket (or closing its listener) and letting go of its lock, a daemon exiting idle
/// still holds the runtime directory. The command must reach the next daemon, not fail.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"))
struct DaemonHandOverTests {
    /// The runtime directory as a daemon leaves it once it has stopped: the directories
    /// there, no socket. (`ps` with no daemon starts none, so they are made here.)
    func stoppedDaemon(_ box: Sandbox) throws {
        for dir in [box.dir, box.runtimeDir, box.stateDir] where !FileManager.default.fileExists(atPath: dir) {
            try #require(mkdir(dir, 0o700) == 0, "mkdir \(dir)")
        }
    }

    /// The lock file held as an exiting daemon holds it: flock, its pid inside, no socket.
    func holdLock(_ box: Sandbox) throws -> Int32 {
        let fd = open(box.runtimeDir + "/daemon.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        try #require(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0, "the lock is not free")
        _ = ftruncate(fd, 0)
        _ = "\(getpid())\n".withCString { pwrite(fd, $0, strlen($0), 0) }
        return fd
    }

    /// Processes other than this one with `path` open.
    static func openers(of path: String) -> [pid_t] {
        let me = getpid()
        return ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { entry in
            guard let pid = pid_t(entry), pid != me, Kernel.descriptorTargets(pid).contains(path) else { return nil }
            return pid
        }
    }

    @Test("a command that finds the last daemon's lock still held, its socket gone, waits for it and starts the next")
    func waitsForExitingHolder() throws {
        try waitForExitingHolder(withoutInotify: false)
    }

    /// The wait is on inotify; without it (see `Sandbox.withoutInotify`), on tries 10 ms apart.
    @Test(
        "without inotify (the user's instances used up) the next daemon still waits for the lock and starts",
        .enabled(if: Sandbox.withoutInotifyRefusal == nil, "\(Sandbox.withoutInotifyRefusal ?? "")"))
    func waitsForExitingHolderWithoutInotify() throws {
        try waitForExitingHolder(withoutInotify: true)
    }

    func waitForExitingHolder(withoutInotify: Bool) throws {
        let box = Sandbox()
        defer { box.close() }
        try stoppedDaemon(box)
        let lock = try holdLock(box)
        let launch = Sandbox.Background(box, ["launch", "next", "--", "sleep", "1000"], withoutInotify: withoutInotify)
        // The next daemon has opened the lock file: it is about to take the lock, or waiting.
        let lockPath = box.runtimeDir + "/daemon.lock"
        let reached = Scenario.eventually { !Self.openers(of: lockPath).isEmpty }
        #expect(reached, "no daemon opened \(lockPath)")
        usleep(100_000)  // as a daemon's last writes would hold it a little longer
        close(lock)
        let result = try #require(launch.result(within: 60))
        #expect(result.status == 0, "\(result.output)")
        #expect(try box.apps()["next"]?.state == .active)
        #expect(box.daemonPID != getpid(), "the next daemon should hold the lock now")
    }

    @Test("a lock holder that never lets go, its socket gone, is named after the hand-over time")
    func namesStuckHolder() throws {
        let box = Sandbox()
        defer { box.close() }
        try stoppedDaemon(box)
        let lock = try holdLock(box)
        defer { close(lock) }
        let start = Clock.monotonicNanos()
        let result = try box.icebox(["launch", "never", "--", "sleep", "1000"])
        let waited = Clock.monotonicNanos() - start
        #expect(result.status == ExitCode.unavailable.rawValue, "\(result.output)")
        #expect(result.stderr.contains("pid \(getpid())") && result.stderr.contains("control socket"), "\(result.stderr)")
        #expect(waited >= Daemon.lockHandOverNanos, "gave up after \(waited) ns")
        // The daemon the launch started waits for the lock too, and gives up in its turn. Let
        // go only once it has: else it takes the lock and serves after this test removed its
        // directories, and makes them again.
        let lockPath = box.runtimeDir + "/daemon.lock"
        let gaveUp = Scenario.eventually(seconds: 10) { Self.openers(of: lockPath).isEmpty }
        #expect(gaveUp, "the daemon the launch started still waits for the lock: \(Self.openers(of: lockPath))")
    }

    /// A listener at the control socket's path that never accepts, then closes: a daemon
    /// exiting between a client's connect and its accept. Its socket file stays behind, as
    /// a killed daemon's would. Returns what `icebox ARGS` printed and its status.
    func resetBeforeAccept(_ box: Sandbox, _ args: [String]) throws -> Sandbox.Result {
        try stoppedDaemon(box)
        let listener = try UnixSocket.listen(path: box.runtimeDir + "/icebox.sock")
        let command = Sandbox.Background(box, args)
        var pfd = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        #expect(poll(&pfd, 1, 10_000) == 1, "the client did not connect")
        close(listener)
        return try #require(command.result(within: 60))
    }

    @Test("a launch whose connection is reset before any answer goes to the next daemon, once")
    func resendsLaunchAfterReset() throws {
        let box = Sandbox()
        defer { box.close() }
        let result = try resetBeforeAccept(box, ["launch", "once", "--", "sleep", "1000"])
        #expect(result.status == 0, "\(result.output)")
        #expect(box.daemonPID != nil, "a daemon should have started")
        let apps = try box.apps()
        #expect(apps.count == 1 && apps["once"]?.state == .active, "\(apps)")
    }

    @Test("icebox run, its connection reset before any answer, runs the app on the next daemon")
    func resendsRunAfterReset() throws {
        let box = Sandbox()
        defer { box.close() }
        let result = try resetBeforeAccept(box, ["run", "--name", "attached", "--", "sh", "-c", "echo from-the-app; exit 3"])
        #expect(result.status == 3, "\(result.output)")
        #expect(result.output.contains("from-the-app"), "\(result.output)")
        #expect(try box.apps()["attached"] != nil)
    }

    @Test("a benchmark whose request is reset before any answer goes on with the next daemon")
    func benchResendsAfterReset() throws {
        let box = Sandbox()
        defer { box.close() }
        // --name: the launch is the benchmark's first request, and the one the listener resets.
        let result = try resetBeforeAccept(
            box,
            [
                "bench", "--name", "b", "--grace", "0", "--runs", "1", "--warmup", "0", "--hold", "10ms", "--evict-every", "0", "--",
                "sleep", "60",
            ])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.stdout.contains("Hot resume is"), "\(result.output)")
        #expect(box.daemonPID != nil, "a daemon should have started")
    }

    @Test("a benchmark rides over a daemon restart more than the reach budget after it started its first daemon")
    func benchReachesALaterDaemon() throws {
        let box = Sandbox()
        defer { box.close() }
        // The benchmark's first request started the daemon, which set its session's reach
        // deadline; the resume after the hold comes past that deadline, to a killed daemon.
        let holdSeconds = ClientSession.reachBudgetNanos / 1_000_000_000 + 1
        let bench = Sandbox.Background(
            box,
            [
                "bench", "--name", "b", "--grace", "0", "--runs", "1", "--warmup", "0", "--hold", "\(holdSeconds)s", "--evict-every", "0",
                "--", "sleep", "60",
            ])
        let suspended = Scenario.eventually(seconds: 30) { (try? box.apps()["b"]?.state) == .suspended }
        try #require(suspended, "the benchmark's app was not suspended")
        try box.killDaemon()
        let result = try #require(bench.result(within: 120))
        #expect(result.status == 0, "\(result.output)")
        #expect(result.stdout.contains("Hot resume is"), "\(result.output)")
    }
}

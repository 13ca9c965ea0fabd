import Glibc
import IceboxCore
import IceboxSystem
import IceboxTestSupport
import Testing

/// The SIGSTOP backend confirms a freeze one process after another. One seen stopped early
/// can be continued by one stopped later (processes that SIGCONT each other): the freeze
/// must not be confirmed then. Real processes and real signals, stepped by hand so that the
/// order of events is the test's, not the scheduler's.
@Suite(.timeLimit(.minutes(5)))
struct SignalFreezeConfirmationTests {
    /// Waits (up to 5 s) until `pid`'s state, as the kernel tells it, satisfies `test`.
    static func wait(_ pid: pid_t, until test: (Character) -> Bool) -> Bool {
        let deadline = Clock.monotonicNanos() + 5_000_000_000
        while Clock.monotonicNanos() < deadline {
            if let state = ProcFS.state(pid: pid), test(state) { return true }
            usleep(1_000)
        }
        return false
    }

    static func stopped(_ c: Character) -> Bool { c == "T" }

    /// `count` real processes that sleep, for a test to stop and continue.
    static func sleepers(_ count: Int) throws -> [SpawnedProcess] {
        try (0..<count).map { _ in try Spawner.spawn(SpawnRequest(executable: "/bin/sleep", arguments: ["sleep", "100"], environment: [])) }
    }

    /// Kills and reaps them, stopped or not.
    static func end(_ processes: [SpawnedProcess]) {
        for p in processes {
            kill(p.handle.pid, SIGKILL)
            _ = try? p.handle.wait(until: Clock.monotonicNanos() + 5_000_000_000)
        }
    }

    @Test("a process seen stopped, then continued by another before the last was stopped: not confirmed, stopped again")
    func continuedAfterSeenStopped() throws {
        let sleepers = try Self.sleepers(2)
        defer { Self.end(sleepers) }
        let pids = sleepers.map(\.handle.pid)
        var steps = SignalFreezeSteps(members: { pids })
        let start = Clock.monotonicNanos(), deadline = start + 30_000_000_000
        steps.begin(with: pids)  // SIGSTOP to both
        try #require(pids.allSatisfy { Self.wait($0, until: Self.stopped) })
        // b is continued (by someone) before the first look: a is seen stopped, b running.
        kill(pids[1], SIGCONT)
        try #require(Self.wait(pids[1]) { !Self.stopped($0) })
        guard case .waiting = steps.step(now: Clock.monotonicNanos(), startedAt: start, deadline: deadline) else {
            Issue.record("confirmed with b running")
            return
        }
        // b stops; meanwhile a, seen stopped already, was continued by a peer.
        kill(pids[1], SIGSTOP)
        kill(pids[0], SIGCONT)
        try #require(Self.wait(pids[1], until: Self.stopped))
        try #require(Self.wait(pids[0]) { !Self.stopped($0) })
        let second = steps.step(now: Clock.monotonicNanos(), startedAt: start, deadline: deadline)
        if case .confirmed = second { Issue.record("confirmed while a runs: \(ProcFS.state(pid: pids[0]) ?? "?")") }
        // The next step stops a again; once the kernel says it is stopped, the freeze is confirmed.
        _ = steps.step(now: Clock.monotonicNanos(), startedAt: start, deadline: deadline)
        #expect(Self.wait(pids[0], until: Self.stopped), "a was not stopped again")
        var confirmed = false
        for _ in 0..<100 where !confirmed {
            if case .confirmed(let report) = steps.step(now: Clock.monotonicNanos(), startedAt: start, deadline: deadline) {
                confirmed = true
                #expect(report.tasks == 2)
            }
        }
        #expect(confirmed)
        #expect(pids.allSatisfy { ProcFS.state(pid: $0) == "T" }, "both stopped when confirmed")
    }

    /// A duration runs until the look that confirmed ended, as bare.c counts it: a step that
    /// reads 10,000 threads takes tens of ms, which a duration counted from the step's start
    /// (its `now`) left out, so `icebox suspend` took 250 ms where the event said 44 ms.
    @Test("a freeze's and a thaw's duration include the look that confirmed them")
    func durationIncludesTheConfirmingLook() throws {
        let sleepers = try Self.sleepers(2)
        defer { Self.end(sleepers) }
        let pids = sleepers.map(\.handle.pid)
        let freezer = SignalFreezer(members: { pids })
        let start = Clock.monotonicNanos()
        var freeze = freezer.beginFreeze(now: start, deadline: start + 30_000_000_000)
        try #require(pids.allSatisfy { Self.wait($0, until: Self.stopped) })
        // Stepped as if no time had passed since the start: only the look itself counts.
        guard case .confirmed(let frozen) = freeze.step(now: start) else {
            Issue.record("not confirmed with both stopped")
            return
        }
        let afterFreeze = Clock.monotonicNanos()
        #expect(frozen.durationNanos > 0 && frozen.durationNanos <= afterFreeze - start, "\(frozen.durationNanos) ns")
        let thawStart = Clock.monotonicNanos()
        var thaw = freezer.beginThaw(now: thawStart, deadline: thawStart + 30_000_000_000)
        guard case .confirmed(let thawed) = thaw.step(now: thawStart) else {
            Issue.record("not confirmed after SIGCONT")
            return
        }
        #expect(thawed.durationNanos > 0 && thawed.durationNanos <= Clock.monotonicNanos() - thawStart, "\(thawed.durationNanos) ns")
    }

    /// How many descriptors of this process are open on the stat files of `pids`.
    static func statFilesOpen(of pids: [pid_t]) -> Int { descriptorsOpen(on: Set(pids.map { "/proc/\($0)/stat" })) }

    /// How many descriptors of this process are open on one of `wanted` (paths as readlink
    /// of /proc/self/fd gives them).
    static func descriptorsOpen(on wanted: Set<String>) -> Int {
        ((try? FileIO.list("/proc/self/fd")) ?? []).filter { fd in
            var buf = [CChar](repeating: 0, count: 256)
            let n = readlink("/proc/self/fd/\(fd)", &buf, buf.count - 1)
            return n > 0 && wanted.contains(String(decoding: buf[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }.count
    }

    /// The freeze reads each member's stat file three times (before the SIGSTOP, to confirm,
    /// to re-check): through a descriptor opened once (ProcessStatFiles), closed when the
    /// freeze ends, confirmed or cancelled, and none kept by a thaw.
    @Test("a freeze keeps each member's /proc stat file open while it runs, and closes them when it ends")
    func statFilesKeptForTheFreezeOnly() throws {
        let sleepers = try Self.sleepers(3)
        defer { Self.end(sleepers) }
        let pids = sleepers.map(\.handle.pid)
        let freezer = SignalFreezer(members: { pids })
        let start = Clock.monotonicNanos()
        var freeze = freezer.beginFreeze(now: start, deadline: start + 30_000_000_000)
        #expect(Self.statFilesOpen(of: pids) == 3, "one per member while the freeze runs")
        try #require(pids.allSatisfy { Self.wait($0, until: Self.stopped) })
        guard case .confirmed = freeze.step(now: Clock.monotonicNanos()) else {
            Issue.record("not confirmed with all stopped")
            return
        }
        #expect(Self.statFilesOpen(of: pids) == 0, "closed once confirmed")
        var thaw = freezer.beginThaw(now: Clock.monotonicNanos(), deadline: Clock.monotonicNanos() + 30_000_000_000)
        #expect(Self.statFilesOpen(of: pids) == 0, "a thaw keeps none")
        guard case .confirmed = thaw.step(now: Clock.monotonicNanos()) else {
            Issue.record("not thawed")
            return
        }
        var cancelled = freezer.beginFreeze(now: Clock.monotonicNanos(), deadline: Clock.monotonicNanos() + 30_000_000_000)
        #expect(Self.statFilesOpen(of: pids) == 3)
        cancelled.cancel()
        #expect(Self.statFilesOpen(of: pids) == 0, "closed once cancelled")
        #expect(pids.allSatisfy { Self.wait($0) { !Self.stopped($0) } }, "the cancelled freeze's SIGCONT went out")
    }

    /// A C compiler on PATH (the tests build a vfork parent with it).
    static let compiler: String? = ["cc", "gcc", "clang"].lazy.compactMap {
        Spawner.resolve($0, path: ProcessEnvironment.dictionary["PATH"])
    }.first

    /// `source` built with the C compiler into `dir`/`name`, whose path it returns.
    static func compile(_ source: String, named name: String, in dir: String, flags: [String] = []) throws -> String {
        try source.write(toFile: dir + "/\(name).c", atomically: true, encoding: .utf8)
        let cc = try Spawner.spawn(
            SpawnRequest(
                executable: try #require(compiler), arguments: ["cc"] + flags + ["-o", dir + "/" + name, dir + "/\(name).c"],
                environment: ["PATH=/usr/local/bin:/usr/bin:/bin:/opt/swift/usr/bin"]))
        try #require(try cc.handle.wait(until: Clock.monotonicNanos() + 60_000_000_000) == .exited(0), "the compiler failed")
        return dir + "/" + name
    }

    /// A C program of two threads built into `dir`/`name`: the second sleeps for good, and the
    /// main one, once it has started it, does `mainThenDoes`.
    static func compileTwoThreads(named name: String, in dir: String, mainThenDoes: String) throws -> String {
        let source = """
            #include <pthread.h>
            #include <unistd.h>
            static void *sleeper(void *arg) { for (;;) pause(); return arg; }
            int main(void) {
                pthread_t t;
                if (pthread_create(&t, 0, sleeper, 0) != 0) return 1;
                \(mainThenDoes)
            }
            """
        return try compile(source, named: name, in: dir, flags: ["-pthread"])
    }

    /// Steps a freeze every millisecond while it waits, until the clock passes `until`.
    static func stepWhileWaiting(_ steps: inout SignalFreezeSteps, startedAt start: UInt64, deadline: UInt64, until: UInt64)
        -> FreezeProgress
    {
        var outcome: FreezeProgress = .waiting(recheckAt: 0, watch: nil)
        while case .waiting = outcome, Clock.monotonicNanos() < until {
            usleep(1_000)
            outcome = steps.step(now: Clock.monotonicNanos(), startedAt: start, deadline: deadline)
        }
        return outcome
    }

    @Test(
        "a vfork parent waiting in the kernel for a child stopped before its exec counts as stopped: the freeze is confirmed, not timed out",
        .enabled(if: SignalFreezeConfirmationTests.compiler != nil, "needs a C compiler (cc, gcc or clang) on PATH"))
    func vforkParent() throws {
        let dir = makeTemporaryDirectory("vfork")
        defer { removeTree(dir) }
        // The child stops itself between vfork and exec: its parent then waits in the kernel
        // (state D, in kernel_clone) for as long as the child stays stopped, as dash and
        // glibc's posix_spawn do when a SIGSTOP round catches them there.
        let source = """
            #include <signal.h>
            #include <sys/wait.h>
            #include <unistd.h>
            int main(void) {
                pid_t child = vfork();
                if (child == 0) {
                    raise(SIGSTOP);
                    execl("/bin/sleep", "sleep", "100", (char *)0);
                    _exit(127);
                }
                int status;
                while (waitpid(child, &status, 0) < 0) {}
                return 0;
            }
            """
        let parent = try Spawner.spawn(
            SpawnRequest(executable: try Self.compile(source, named: "vforker", in: dir), arguments: ["vforker"], environment: []))
        var child: pid_t?
        defer {
            if let child { kill(child, SIGKILL) }
            kill(parent.handle.pid, SIGKILL)
            _ = try? parent.handle.wait(until: Clock.monotonicNanos() + 5_000_000_000)
        }
        let found = Clock.monotonicNanos() + 5_000_000_000
        while child == nil && Clock.monotonicNanos() < found {
            child = ProcFS.children(of: parent.handle.pid).first { ProcFS.state(pid: $0) == "T" }
            if child == nil { usleep(1_000) }
        }
        let stoppedChild = try #require(child, "the vfork child did not stop")
        try #require(Self.wait(parent.handle.pid) { $0 == "D" }, "the parent is not waiting in the kernel")
        let pids = [parent.handle.pid, stoppedChild]
        var steps = SignalFreezeSteps(members: { pids })
        let start = Clock.monotonicNanos(), deadline = start + 3_000_000_000
        steps.begin(with: pids)
        let outcome = Self.stepWhileWaiting(&steps, startedAt: start, deadline: deadline, until: deadline + 100_000_000)
        guard case .confirmed(let report) = outcome else {
            Issue.record("not confirmed: \(outcome)")
            return
        }
        #expect(report.tasks == 2)
        // Thawed, the child execs and the parent goes on: nothing was left stuck.
        kill(stoppedChild, SIGCONT)
        kill(parent.handle.pid, SIGCONT)
        #expect(Self.wait(parent.handle.pid) { $0 == "S" }, "the parent did not go on after the thaw")
    }

    /// A process of several threads has them read through its /proc/PID/task kept open
    /// (TaskDirectory): "TID/stat" from there, not the five-part path, until the process is
    /// seen stopped. A cgroup v2 freeze holds the SIGSTOP back (the threads sleep on with it
    /// pending) so the test can look while the freeze waits.
    @Test(
        "a freeze reads a process's threads through its task directory, kept open until the process is seen stopped",
        .enabled(if: SignalFreezeConfirmationTests.compiler != nil, "needs a C compiler (cc, gcc or clang) on PATH"),
        .enabled(if: CgroupTestRoots.hasV2, "\(CgroupTestRoots.v2Unavailable ?? "")"))
    func taskDirectoryKeptWhileConfirming() throws {
        let dir = makeTemporaryDirectory("threads")
        defer { removeTree(dir) }
        let program = try Self.compileTwoThreads(named: "two", in: dir, mainThenDoes: "for (;;) pause();")
        let roots = CgroupTestRoots()
        defer { roots.cleanup() }
        try FileIO.makeDirectories(roots.v2)
        let process = try Spawner.spawn(SpawnRequest(executable: program, arguments: ["two"], environment: []))
        defer { Self.end([process]) }
        let pid = process.handle.pid
        try FileIO.write(roots.v2 + "/cgroup.procs", "\(pid)")
        let started = Clock.monotonicNanos() + 5_000_000_000
        while ProcFS.threadCount(pid: pid) != 2 && Clock.monotonicNanos() < started { usleep(1_000) }
        try #require(ProcFS.threadCount(pid: pid) == 2, "the second thread did not start")
        try FileIO.write(roots.v2 + "/cgroup.freeze", "1")
        while readFile(roots.v2 + "/cgroup.events")?.contains("frozen 1") != true && Clock.monotonicNanos() < started { usleep(1_000) }
        try #require(readFile(roots.v2 + "/cgroup.events")?.contains("frozen 1") == true, "the cgroup did not freeze")

        let taskDirectory: Set<String> = ["/proc/\(pid)/task"]
        var steps = SignalFreezeSteps(members: { [pid] })
        let start = Clock.monotonicNanos(), deadline = start + 30_000_000_000
        steps.begin(with: [pid])
        guard case .waiting = steps.step(now: Clock.monotonicNanos(), startedAt: start, deadline: deadline) else {
            Issue.record("confirmed while the cgroup freezer holds the SIGSTOP back")
            return
        }
        #expect(Self.descriptorsOpen(on: taskDirectory) == 1, "the task directory is open while the threads are read")
        try FileIO.write(roots.v2 + "/cgroup.freeze", "0")
        let outcome = Self.stepWhileWaiting(&steps, startedAt: start, deadline: deadline, until: Clock.monotonicNanos() + 5_000_000_000)
        guard case .confirmed(let report) = outcome else {
            steps.cancel()
            Issue.record("not confirmed after the cgroup thaw: \(outcome)")
            return
        }
        #expect(report.tasks == 2)
        #expect(Self.descriptorsOpen(on: taskDirectory) == 0, "closed once the process is seen stopped")
        var thaw = SignalFreezer(members: { [pid] }).beginThaw(now: Clock.monotonicNanos(), deadline: deadline)
        guard case .confirmed = thaw.step(now: Clock.monotonicNanos()) else {
            Issue.record("not thawed")
            return
        }
        #expect(Self.descriptorsOpen(on: taskDirectory) == 0, "a thaw keeps none")
    }

    /// A freeze whose processes left to stop are all children of the loop that steps it, told
    /// that it hears their SIGCHLDs, waits for that: re-reads 1 ms apart (`Backoff.safetyNet`),
    /// not 20 µs. A cgroup v2 freeze holds the SIGSTOP back so the freeze waits.
    @Test(
        "a SIGSTOP freeze waiting only on children whose stops its loop hears re-reads as a safety net; not for a grandchild, nor untold",
        .enabled(if: CgroupTestRoots.hasV2, "\(CgroupTestRoots.v2Unavailable ?? "")"))
    func waitsOnTheChildrensStops() throws {
        let roots = CgroupTestRoots()
        defer { roots.cleanup() }
        try FileIO.makeDirectories(roots.v2)
        // A child, and a grandchild (the sleep its shell starts).
        let child = try Spawner.spawn(SpawnRequest(executable: "/bin/sleep", arguments: ["sleep", "100"], environment: []))
        let shell = try Spawner.spawn(SpawnRequest(executable: "/bin/sh", arguments: ["sh", "-c", "sleep 100 & wait"], environment: []))
        defer { Self.end([child, shell]) }
        let found = Clock.monotonicNanos() + 5_000_000_000
        var grandchild: pid_t?
        while grandchild == nil && Clock.monotonicNanos() < found {
            grandchild = ProcFS.children(of: shell.handle.pid).first
            if grandchild == nil { usleep(1_000) }
        }
        let held = [child.handle.pid, try #require(grandchild, "the shell started no sleep")]
        defer { for pid in held { kill(pid, SIGKILL) } }
        for pid in held { try FileIO.write(roots.v2 + "/cgroup.procs", "\(pid)") }
        try FileIO.write(roots.v2 + "/cgroup.freeze", "1")
        while readFile(roots.v2 + "/cgroup.events")?.contains("frozen 1") != true && Clock.monotonicNanos() < found { usleep(1_000) }
        try #require(readFile(roots.v2 + "/cgroup.events")?.contains("frozen 1") == true, "the cgroup did not freeze")

        for (pid, told, waitsOnStops) in [(held[0], true, true), (held[0], false, false), (held[1], true, false)] {
            var op = SignalFreezer(members: { [pid] }).beginFreeze(now: Clock.monotonicNanos(), deadline: .max)
            if told { op.expectPromptNotification() }
            let now = Clock.monotonicNanos()
            guard case .waiting(let recheckAt, _) = op.step(now: now) else {
                Issue.record("confirmed while the cgroup freezer holds the SIGSTOP back")
                return
            }
            let what = "\(pid == held[0] ? "a child" : "a grandchild"), \(told ? "told" : "not told")"
            #expect(op.waitsOnAnnouncement == waitsOnStops, "\(what)")
            if waitsOnStops { #expect(recheckAt - now >= Backoff.safetyNet, "\(what): re-read after \(recheckAt - now) ns") }
            op.cancel()  // SIGCONT: the pending SIGSTOP goes
        }
    }

    /// A process whose leader has exited (pthread_exit in main) and left a thread running: the
    /// SIGSTOP sent to the leader alone is never taken, so the freeze signals the whole process
    /// once it sees the leader gone (state Z with other threads).
    @Test(
        "a process whose leader has exited is stopped through its other thread",
        .enabled(if: SignalFreezeConfirmationTests.compiler != nil, "needs a C compiler (cc, gcc or clang) on PATH"))
    func exitedLeader() throws {
        let dir = makeTemporaryDirectory("leader")
        defer { removeTree(dir) }
        let program = try Self.compileTwoThreads(named: "leaderless", in: dir, mainThenDoes: "pthread_exit(0);")
        let process = try Spawner.spawn(SpawnRequest(executable: program, arguments: ["leaderless"], environment: []))
        defer { Self.end([process]) }
        let pid = process.handle.pid
        try #require(Self.wait(pid) { $0 == "Z" }, "the leader did not exit")
        var freeze = SignalFreezer(members: { [pid] }).beginFreeze(
            now: Clock.monotonicNanos(), deadline: Clock.monotonicNanos() + 5_000_000_000)
        var outcome = freeze.step(now: Clock.monotonicNanos())
        while case .waiting = outcome {
            usleep(1_000)
            outcome = freeze.step(now: Clock.monotonicNanos())
        }
        guard case .confirmed(let report) = outcome else {
            Issue.record("not confirmed: \(outcome)")
            return
        }
        #expect(report.tasks == 1, "the one live thread")
        let thread = try #require(ProcFS.threads(of: pid).first { $0 != pid })
        #expect(ProcFS.state(pid: pid, tid: thread) == "T")
        kill(pid, SIGCONT)
    }
}

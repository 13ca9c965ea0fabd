import Glibc
import IceboxTestSupport
import Testing

@testable import IceboxSystem

@Suite("ProcFS parsers")
struct ProcFSTests {
    /// A realistic 52-field /proc/PID/stat line (taken from a real `cat`), with the command
    /// name replaced. Field 22 (start time) is 64035.
    static func statLine(
        pid: Int = 1234, comm: String, state: String = "S", ppid: Int = 1,
        pgrp: Int = 1234, session: Int = 1200, start: UInt64 = 64035, sigcatch: String = "0", threads: String = "1"
    ) -> String {
        "\(pid) (\(comm)) \(state) \(ppid) \(pgrp) \(session) 0 -1 4194304 99 0 0 0 0 0 0 0 20 0 \(threads) 0 \(start) "
            + "3133440 410 18446744073709551615 94341676216320 94341676236201 140727661987568 0 0 0 0 0 \(sigcatch) 0 0 0 "
            + "17 1 0 0 0 0 0 94341676252208 94341676253824 94341735981056 140727661988558 140727661988578 "
            + "140727661988578 140727661989867 0\n"
    }

    @Test func statLineFixtureHas52Fields() {
        #expect(Self.statLine(comm: "cat").split(separator: " ").count == 52)
    }

    @Test func stateIsTheLetterAfterTheLastParenthesis() throws {
        let root = makeTemporaryDirectory("procfs")
        defer { removeTree(root) }
        func put(_ rel: String, _ text: String) {
            _ = rel.split(separator: "/").dropLast().reduce(root) { dir, part in
                mkdir(dir + "/" + part, 0o755)
                return dir + "/" + part
            }
            writeFile(root + "/" + rel, text)
        }
        put("10/stat", Self.statLine(pid: 10, comm: "sleep", state: "T"))
        put("11/stat", Self.statLine(pid: 11, comm: "x) R (y", state: "t"))
        put("11/task/12/stat", Self.statLine(pid: 12, comm: "worker)", state: "Z"))
        put("13/stat", "13 (no state")
        #expect(ProcFS.state(pid: 10, procRoot: root) == "T")
        #expect(ProcFS.state(pid: 11, procRoot: root) == "t", "a name with parentheses and a state letter in it")
        #expect(ProcFS.state(pid: 11, tid: 12, procRoot: root) == "Z")
        #expect(ProcFS.state(pid: 13, procRoot: root) == nil)
        #expect(ProcFS.state(pid: 14, procRoot: root) == nil, "gone")
        // This thread, reading its own stat, is running (/proc/thread-self is "PID/task/TID").
        var link = [CChar](repeating: 0, count: 64)
        let n = readlink("/proc/thread-self", &link, 63)
        let tid = try #require(
            pid_t(
                String(decoding: link.prefix(max(0, n)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
                    .split(separator: "/").last ?? ""))
        #expect(ProcFS.state(pid: getpid(), tid: tid) == "R")
        #expect(ProcFS.state(pid: getpid(), tid: tid) == ProcFS.parseStat(try FileIO.read("/proc/\(getpid())/task/\(tid)/stat"))?.state)
    }

    @Test func parseStatReadsFieldsAfterASimpleName() throws {
        let stat = try #require(ProcFS.parseStat(Self.statLine(comm: "cat", state: "R", ppid: 5911, pgrp: 5911, session: 5252)))
        #expect(
            stat
                == ProcFS.Stat(
                    state: "R", ppid: 5911, pgrp: 5911, session: 5252, userTicks: 0, systemTicks: 0, startTimeTicks: 64035,
                    residentPages: 410))
    }

    @Test func parseStatHandlesSpacesAndParenthesesInTheCommandName() throws {
        let line = Self.statLine(comm: "my (odd) name", state: "S", ppid: 1, pgrp: 1234, session: 1234, start: 987654321)
        let stat = try #require(ProcFS.parseStat(line))
        #expect(stat.state == "S")
        #expect(stat.ppid == 1)
        #expect(stat.pgrp == 1234)
        #expect(stat.session == 1234)
        #expect(stat.startTimeTicks == 987654321)
    }

    @Test func parseStatHandlesANameThatLooksLikeFields() throws {
        // A hostile name that imitates the fields that follow it.
        let line = Self.statLine(comm: "x) Z 99 99 99 0 -1", state: "D", ppid: 7, pgrp: 8, session: 9, start: 42)
        let stat = try #require(ProcFS.parseStat(line))
        #expect(
            stat
                == ProcFS.Stat(
                    state: "D", ppid: 7, pgrp: 8, session: 9, userTicks: 0, systemTicks: 0, startTimeTicks: 42, residentPages: 410))
    }

    @Test func parseStatRejectsTruncatedOrMalformedText() {
        #expect(ProcFS.parseStat("") == nil)
        #expect(ProcFS.parseStat("1234 (cat R 1 2 3") == nil)  // no ")"
        #expect(ProcFS.parseStat("1234 (cat) R 1 1234 1234 0 -1 4194304") == nil)  // too few fields
        #expect(ProcFS.parseStat(Self.statLine(comm: "cat", state: "R x")) == nil)  // ppid not a number
    }

    @Test func statusFieldFindsTheValueTrimmed() {
        let text = "Name:\tgrep\nState:\tR (running)\nPPid:\t5911\nVmRSS:\t    2100 kB\nSigCgt:\t0000000000004a02\n"
        #expect(ProcFS.statusField("Name", in: text) == "grep")
        #expect(ProcFS.statusField("State", in: text) == "R (running)")
        #expect(ProcFS.statusField("VmRSS", in: text) == "2100 kB")
        #expect(ProcFS.statusField("SigCgt", in: text) == "0000000000004a02")
    }

    @Test func statusFieldNeedsTheWholeKey() {
        let text = "SigQ:\t0/96365\nSigPnd:\t0000000000000000\nVmRSS:\t2100 kB\n"
        #expect(ProcFS.statusField("Sig", in: text) == nil)
        #expect(ProcFS.statusField("Vm", in: text) == nil)
        #expect(ProcFS.statusField("SigCgt", in: text) == nil)
        #expect(ProcFS.statusField("SigPnd", in: text) == "0000000000000000")
    }

    /// The byte search /proc text takes finds what a search by lines of Characters finds, over
    /// random text of the characters that matter (keys, separators, blanks, empty lines) and
    /// some that send it to the Character search (CR, non-ASCII).
    @Test func statusFieldReadsAsTheCharacterSearchDoes() {
        func byCharacters(_ name: String, _ text: String) -> String? {
            text.split(separator: "\n").first { $0.hasPrefix(name + ":") }
                .map { $0.dropFirst(name.count + 1).trimmingCharacters(in: " \t") }
        }
        var state: UInt64 = 7
        func below(_ n: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(n))
        }
        let pieces = ["Sig", "SigCgt", "Name", ":", "\t", " ", "\n", "\n\n", "0a", "x y", "\r\n", "é", ":\u{301}"]
        for _ in 0..<3000 {
            let text = (0..<below(14)).map { _ in pieces[below(pieces.count)] }.joined()
            for name in ["SigCgt", "Sig", "Name", ""] {
                #expect(ProcFS.statusField(name, in: text) == byCharacters(name, text), "\(name) in \(text.debugDescription)")
            }
        }
    }

    @Test func maskHasSignalReadsBitSignalMinusOne() {
        // 0x4a02 = bits 1, 9, 11, 14 → SIGINT(2), SIGUSR1(10), SIGUSR2(12), SIGTERM(15).
        let mask: UInt64 = 0x4a02
        for sig: Int32 in [2, 10, 12, 15] { #expect(ProcFS.maskHasSignal(mask, sig), "signal \(sig)") }
        for sig: Int32 in [1, 3, 9, 11, 13, 14, 16, 64] { #expect(!ProcFS.maskHasSignal(mask, sig), "signal \(sig)") }
        #expect(ProcFS.maskHasSignal(0x200, SIGUSR1))
        #expect(!ProcFS.maskHasSignal(0x200, SIGUSR2))
    }

    @Test func maskHasSignalHandlesTheTopBitAndBadSignals() {
        #expect(ProcFS.maskHasSignal(1 << 63, 64))
        #expect(!ProcFS.maskHasSignal(1 << 63, 63))
        #expect(!ProcFS.maskHasSignal(.max, 0))
        #expect(!ProcFS.maskHasSignal(.max, 65))
        #expect(!ProcFS.maskHasSignal(.max, -1))
    }

    @Test func unifiedCgroupPicksTheV2LineOfAHybridHost() {
        let text = """
            12:freezer:/icebox/web
            9:name=systemd:/
            4:memory:/user.slice
            1:cpu,cpuacct:/
            0::/icebox/web

            """
        #expect(ProcFS.unifiedCgroup(in: text) == "/icebox/web")
        #expect(ProcFS.unifiedCgroup(in: "0::/\n") == "/")
    }

    @Test func unifiedCgroupIsNilOnAPureV1Host() {
        #expect(ProcFS.unifiedCgroup(in: "6:freezer:/\n4:memory:/x\n1:name=systemd:/\n") == nil)
        #expect(ProcFS.unifiedCgroup(in: "") == nil)
    }

    @Test func parseKiloBytesConvertsToBytes() {
        #expect(ProcFS.parseKiloBytes("18040 kB") == 18040 * 1024)
        #expect(ProcFS.parseKiloBytes("0 kB") == 0)
        #expect(ProcFS.parseKiloBytes("2100") == 2100 * 1024)
        #expect(ProcFS.parseKiloBytes("kB") == nil)
        #expect(ProcFS.parseKiloBytes("") == nil)
    }

    @Test func catchesSignalReadsSigcatchFromAFakeProcRoot() {
        let root = makeTemporaryDirectory("proc")
        defer { removeTree(root) }
        mkdir(root + "/4242", 0o755)
        // SIGUSR1 (10) caught: bit 9, 512; the name holds spaces and a ")".
        writeFile(root + "/4242/stat", Self.statLine(pid: 4242, comm: "a) b 1 2", sigcatch: "512"))
        #expect(ProcFS.catchesSignal(pid: 4242, SIGUSR1, procRoot: root))
        #expect(!ProcFS.catchesSignal(pid: 4242, SIGUSR2, procRoot: root))
        #expect(!ProcFS.catchesSignal(pid: 4243, SIGUSR1, procRoot: root), "no such pid")
        mkdir(root + "/9", 0o755)
        writeFile(root + "/9/stat", Self.statLine(pid: 9, comm: "top", sigcatch: "9223372036854775808"))
        #expect(ProcFS.catchesSignal(pid: 9, 64, procRoot: root))
        #expect(!ProcFS.catchesSignal(pid: 9, SIGUSR1, procRoot: root))
    }

    @Test func catchesSignalIsFalseForAnUnreadableSigcatch() {
        let root = makeTemporaryDirectory("proc")
        defer { removeTree(root) }
        for (pid, line) in [
            (7, Self.statLine(pid: 7, comm: "big", sigcatch: "18446744073709551616")),  // 2^64: does not fit
            (8, Self.statLine(pid: 8, comm: "word", sigcatch: "x512")),
            (11, "11 (short) S 1 2 3\n"),
            (12, "no name here\n"),
        ] {
            mkdir(root + "/\(pid)", 0o755)
            writeFile(root + "/\(pid)/stat", line)
            #expect(!ProcFS.catchesSignal(pid: pid_t(pid), SIGUSR1, procRoot: root), "\(line)")
        }
    }

    @Test func caughtSignalsReadsField34OfALine() {
        #expect(ProcFS.caughtSignals(inStatLine: Self.statLine(comm: "x) (y", sigcatch: "512")) == 512)
        #expect(ProcFS.caughtSignals(inStatLine: Self.statLine(comm: "max", sigcatch: "18446744073709551615")) == .max)
        #expect(ProcFS.caughtSignals(inStatLine: Self.statLine(comm: "over", sigcatch: "18446744073709551616")) == nil)
        #expect(ProcFS.caughtSignals(inStatLine: "1 (a) S 1 1 1") == nil, "too short")
        #expect(ProcFS.caughtSignals(inStatLine: "") == nil)
        #expect(ProcFS.caughtSignals(inStatLine: ")") == nil)
    }

    @Test func stopStatReadsFieldsThreeFourTwentyAndThirtyOneOfALine() {
        let line = ProcFS.stopStat(inStatLine: Self.statLine(comm: "x) (y", state: "T", ppid: 4321, threads: "10000"))
        #expect(line?.state == "T")
        #expect(line?.threads == 10_000)
        #expect(line?.ppid == 4321)
        #expect(ProcFS.stopStat(inStatLine: Self.statLine(comm: "a", threads: "x1")) == nil, "not a number")
        #expect(ProcFS.stopStat(inStatLine: "1 (a) S 1 1 1") == nil, "too short")
        #expect(ProcFS.stopStat(inStatLine: ")") == nil)
    }

    /// A process of one thread, read through its path and through a descriptor kept open,
    /// and nothing through that descriptor once it has exited.
    @Test func stopStatOfARealProcess() throws {
        let child = try Spawner.spawn(SpawnRequest(executable: "/bin/sleep", arguments: ["sleep", "100"], environment: []))
        let pid = child.handle.pid
        defer {
            kill(pid, SIGKILL)
            _ = try? child.handle.wait(until: Clock.monotonicNanos() + 5_000_000_000)
        }
        let fd = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        kill(pid, SIGSTOP)
        var stopped = false
        for _ in 0..<5000 where !stopped {
            stopped = ProcFS.stopStat(pid: pid)?.state == "T"
            if !stopped { usleep(1000) }
        }
        #expect(stopped)
        #expect(ProcFS.stopStat(pid: pid)?.threads == 1)
        #expect(ProcFS.stopStat(pid: pid)?.ppid == getpid())
        #expect(ProcFS.stopStat(statFD: fd)?.state == "T")
        #expect(ProcFS.stopStat(statFD: fd)?.threads == 1)
        kill(pid, SIGKILL)
        _ = try child.handle.wait(until: Clock.monotonicNanos() + 5_000_000_000)
        #expect(ProcFS.stopStat(statFD: fd) == nil, "reaped: the kept descriptor reads nothing")
    }

    @Test func catchesSignalSeesARealHandler() {
        // This test process: SIGWINCH (ignored by default, so harmless if it comes) handled
        // while the check runs, then as it was.
        var handler = sigaction(), old = sigaction()
        handler.__sigaction_handler.sa_handler = { _ in }
        sigaction(SIGWINCH, &handler, &old)
        defer { sigaction(SIGWINCH, &old, nil) }
        #expect(ProcFS.catchesSignal(pid: getpid(), SIGWINCH))
        #expect(!ProcFS.catchesSignal(pid: getpid(), SIGTTOU), "nothing here handles SIGTTOU")
    }

    /// The daemon keeps each app's /proc/PID/stat open: a kept descriptor reads the mask as
    /// it is now, again and again, and nothing once its process has exited, even while the
    /// pid is unused or reused.
    @Test func aKeptStatDescriptorReadsTheMaskNowAndNothingAfterExit() throws {
        // SIGURG (ignored by default), not SIGWINCH: other tests of this process set a
        // SIGWINCH handler while this one runs, and `before` then had it (a none-layout run).
        var handler = sigaction(), old = sigaction()
        handler.__sigaction_handler.sa_handler = { _ in }
        let own = open("/proc/self/stat", O_RDONLY | O_CLOEXEC)
        try #require(own >= 0)
        defer { close(own) }
        let before = try #require(ProcFS.caughtSignals(statFD: own))
        sigaction(SIGURG, &handler, &old)
        let during = try #require(ProcFS.caughtSignals(statFD: own))
        #expect(ProcFS.catchesSignal(statFD: own, SIGURG))
        sigaction(SIGURG, &old, nil)
        #expect(!ProcFS.catchesSignal(statFD: own, SIGURG))
        #expect(!ProcFS.maskHasSignal(before, SIGURG) && ProcFS.maskHasSignal(during, SIGURG))
        // The rest of the mask as it was (SIGWINCH aside: other tests may change it meanwhile).
        let winch = UInt64(1) << UInt64(SIGWINCH - 1)
        #expect(ProcFS.caughtSignals(statFD: own).map { $0 & ~winch } == before & ~winch, "read again from offset 0")

        let child = try Spawner.spawn(SpawnRequest(executable: "/bin/true", arguments: ["true"], environment: [])).handle
        let fd = open("/proc/\(child.pid)/stat", O_RDONLY | O_CLOEXEC)
        _ = try child.wait(until: Clock.monotonicNanos() + 10_000_000_000)
        if fd >= 0 {
            defer { close(fd) }
            #expect(ProcFS.caughtSignals(statFD: fd) == nil, "the process is gone: ESRCH")
            #expect(!ProcFS.catchesSignal(statFD: fd, SIGUSR1))
        }
        #expect(ProcFS.caughtSignals(statFD: -1) == nil)
    }

    @Test func statReadsAFakeProcRoot() {
        let root = makeTemporaryDirectory("proc")
        defer { removeTree(root) }
        mkdir(root + "/1234", 0o755)
        writeFile(root + "/1234/stat", Self.statLine(comm: "my (odd) name", state: "T", ppid: 10, pgrp: 1234, session: 1200, start: 5555))
        #expect(
            ProcFS.stat(pid: 1234, procRoot: root)
                == ProcFS.Stat(
                    state: "T", ppid: 10, pgrp: 1234, session: 1200, userTicks: 0, systemTicks: 0, startTimeTicks: 5555, residentPages: 410)
        )
        #expect(ProcFS.stat(pid: 999, procRoot: root) == nil)
    }

    @Test func statOfThisProcessMatchesTheKernel() throws {
        let stat = try #require(ProcFS.stat(pid: getpid()))
        #expect(stat.ppid == getppid())
        #expect(stat.pgrp == getpgrp())
        #expect(stat.session == getsid(0))
    }

    @Test func stringTrimmedStripsWhitespaceAtBothEnds() {
        #expect(" \t1\n\r".trimmed() == "1")
        #expect("a b".trimmed() == "a b")
        #expect("  ".trimmed() == "")
    }
}

/// `ProcFS.threadCount` against real processes: the daemon's thaw guard is left out for a
/// process it counts one thread in, so a wrong count changes how every thaw of that app runs.
@Suite("ProcFS thread count")
struct ProcFSThreadCountTests {
    /// Starts `executable` (the project's `Spawner`, so the process is held by its pidfd), runs
    /// `body` with its pid, then kills and reaps it.
    static func withProcess(_ executable: String, _ arguments: [String], _ body: (pid_t) throws -> Void) throws {
        let request = SpawnRequest(
            executable: executable, arguments: [executable] + arguments, environment: ["PATH=/usr/bin:/bin"])
        let handle = try Spawner.spawn(request).handle
        defer {
            _ = try? handle.send(SIGKILL)  // ESRCH only: it has ended already
            _ = try? handle.wait(until: Clock.monotonicNanos() + 5_000_000_000)  // reaped, or the test fails below
        }
        try body(handle.pid)
    }

    static let hasPython = access("/usr/bin/python3", X_OK) == 0

    @Test("one thread for a sleep; nil for a pid that is gone")
    func countsOneThread() throws {
        try Self.withProcess("/bin/sleep", ["100"]) { pid in #expect(ProcFS.threadCount(pid: pid) == 1) }
        var gone: pid_t = 0
        try Self.withProcess("/bin/true", []) { pid in gone = pid }  // reaped on the way out
        #expect(ProcFS.threadCount(pid: gone) == nil, "a reaped pid still counted")
    }

    @Test("four for a python3 that started three threads", .enabled(if: hasPython, "needs python3"))
    func countsEveryThread() throws {
        let source =
            "import threading, time\n"
            + "[threading.Thread(target=time.sleep, args=(100,), daemon=True).start() for _ in range(3)]\ntime.sleep(100)\n"
        try Self.withProcess("/usr/bin/python3", ["-c", source]) { pid in
            let deadline = Clock.monotonicNanos() + 10_000_000_000
            while ProcFS.threadCount(pid: pid) != 4 && Clock.monotonicNanos() < deadline { usleep(10_000) }
            #expect(ProcFS.threadCount(pid: pid) == 4)
        }
    }
}

import Foundation
import Glibc
import IceboxSystem
import Testing

@testable import IceboxCore  // AppRecord's memberwise init, for the record a killed daemon leaves

/// `icebox adopt` and `icebox release` on processes the test starts itself, outside icebox
/// (Foundation's Process, not `icebox launch`), checked from the kernel: /proc/PID/cgroup,
/// cgroup.procs, cgroup.events, /proc/PID/stat.
@Suite(
    .serialized,
    .enabled(if: Sandbox.cgroup2Missing == nil, "adopt moves processes between cgroup v2 directories: \(Sandbox.cgroup2Missing ?? "")"),
    .timeLimit(.minutes(5)))
struct AdoptTests {
    /// A process started outside icebox, killed (and reaped) when the test ends however it ends.
    final class Outside {
        let process = Process()
        var pid: pid_t { process.processIdentifier }

        /// python3 itself, not a launcher such as pyenv's shim (a shell script that forks
        /// helpers before it execs python: those would be part of the tree).
        static let python: String = {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            p.arguments = ["python3", "-c", "import sys; print(sys.executable)"]
            let out = Pipe()
            p.standardOutput = out
            try? p.run()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        }()

        init(_ arguments: [String]) throws {
            process.executableURL = URL(fileURLWithPath: arguments[0] == "python3" ? Self.python : "/usr/bin/env")
            process.arguments = arguments[0] == "python3" ? Array(arguments.dropFirst()) : arguments
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
        }

        /// Kills the process and every descendant still found under it, then reaps it. Stopped
        /// first, so that it forks no more while its tree is killed (a killed parent's
        /// children would leave the tree for the subreaper, out of reach).
        func kill() {
            Glibc.kill(pid, SIGSTOP)
            for _ in 0..<3 {
                let tree = AdoptTests.tree(of: pid).filter { $0 != pid }
                if tree.isEmpty { break }
                for child in tree.reversed() { Glibc.kill(child, SIGKILL) }
            }
            Glibc.kill(pid, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// A process that sleeps, with no signal blocked (the test runner's blocked signals are
    /// inherited through Process: a `sleep` would ignore SIGTERM).
    static let sleeper = ["python3", "-c", "import signal, time; signal.pthread_sigmask(signal.SIG_SETMASK, []); time.sleep(1000)"]

    /// A python counter: writes an increasing number to `counter` every 10 ms and appends a
    /// line to `notices` on each SIGUSR1 (its background notice).
    static func counterScript(_ box: Sandbox) -> (script: String, counter: String, notices: String) {
        let script = box.dir + "/counter.py", counter = box.dir + "/counter", notices = box.dir + "/notices"
        let source = """
            import os, signal, sys, time
            signal.pthread_sigmask(signal.SIG_SETMASK, [])  # the test runner's blocked signals are inherited
            counter, notices = sys.argv[1], sys.argv[2]
            def notice(sig, frame):
                with open(notices, 'a') as f:
                    f.write('notice\\n')
            signal.signal(signal.SIGUSR1, notice)
            n = 0
            while True:
                n += 1
                with open(counter + '.tmp', 'w') as f:
                    f.write(str(n))
                os.replace(counter + '.tmp', counter)
                time.sleep(0.01)
            """
        try? source.write(toFile: script, atomically: true, encoding: .utf8)
        return (script, counter, notices)
    }

    static func read(_ path: String) -> Int? {
        (try? String(contentsOfFile: path, encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    static func waitFor(_ what: String, timeout: Double = 10, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while try !condition() && Date() < deadline { usleep(20_000) }
        #expect(try condition(), "timed out waiting for \(what)")
    }

    /// The v2 cgroup directory of a process, from /proc/PID/cgroup (nil once it is gone).
    static func cgroup(of pid: pid_t) -> String? {
        guard let unified = Sandbox.mounts.unifiedMount, let text = try? String(contentsOfFile: "/proc/\(pid)/cgroup", encoding: .utf8)
        else { return nil }
        return CgroupMembership.path(in: text, controller: nil, mount: unified)
    }

    /// `root` and its descendants, by every process's parent in /proc/PID/stat (the kernel's
    /// truth, not icebox's walk).
    static func tree(of root: pid_t) -> [pid_t] {
        var out: [pid_t] = []
        var queue = [root]
        while let pid = queue.popLast() {
            out.append(pid)
            queue += Kernel.children(of: pid)
        }
        return out
    }

    /// A cgroup of the test's own beside the sandbox's root (not under it: a daemon adopts
    /// or removes what it finds under its root), removed at the end.
    static func makeCgroup(_ box: Sandbox, _ name: String) throws -> String {
        let path = try #require(box.cgroupRoot) + "-" + name
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func removeCgroup(_ path: String) {
        for dir in CgroupTree.directoriesBottomUp(path) {
            for pid in Sandbox.pids(in: dir) { kill(pid, SIGKILL) }
            for _ in 0..<100 where rmdir(dir) != 0 && errno == EBUSY { usleep(10_000) }
        }
    }

    static func move(_ pid: pid_t, to cgroup: String) throws {
        try String(pid).write(toFile: cgroup + "/cgroup.procs", atomically: false, encoding: .utf8)
    }

    @Test("a python counter started outside icebox is adopted, suspended with its notice, resumed, and evicted by the budget")
    func adoptSuspendResumeEvict() throws {
        let box = Sandbox("adopt")
        defer { box.close() }
        let (script, counter, notices) = Self.counterScript(box)
        let outside = try Outside(["python3", script, counter, notices])
        defer { outside.kill() }
        try Self.waitFor("the counter to start") { Self.read(counter) != nil }
        let origin = Self.cgroup(of: outside.pid)

        let adopt = try box.icebox(["adopt", "counter", "--pid", String(outside.pid), "--grace", "1s"])
        #expect(adopt.status == 0, "\(adopt.output)")
        #expect(adopt.stdout.contains("counter  adopted  pid \(outside.pid)"), "\(adopt.stdout)")
        let record = try #require(try box.apps()["counter"])
        let cgroup = try #require(record.cgroup)
        #expect(record.state == .active && record.pid == outside.pid)
        #expect(record.adoptedFrom == origin, "where it came from: \(record.adoptedFrom ?? "nil") vs \(origin ?? "nil")")
        #expect(record.options.command.suffix(3) == [script, counter, notices], "read from /proc/PID/cmdline: \(record.options.command)")
        #expect(record.options.command.first?.hasSuffix("python3") == true)
        #expect(Self.cgroup(of: outside.pid) == cgroup, "the kernel puts it in \(Self.cgroup(of: outside.pid) ?? "nil")")
        #expect(!Kernel.cgroupFrozen(cgroup), "thawed after the move")
        let adopted = try #require(box.events("counter").first { $0.kind == .adopted })
        #expect(adopted.durationNanos != nil && adopted.durationNanos! > 0, "the move's timing")
        let ps = try box.icebox(["ps"])
        #expect(ps.stdout.contains("adopted"), "ps marks it: \(ps.stdout)")
        let logs = try box.icebox(["logs", "counter"])
        #expect(logs.status == 1 && logs.stderr.contains("does not capture its output"), "\(logs.output)")

        // Suspend: the notice arrives, then the kernel freezes it and the counter stops.
        let suspend = try box.icebox(["suspend", "counter"])
        #expect(suspend.status == 0, "\(suspend.output)")
        #expect(suspend.stdout.contains("SIGUSR1"), "\(suspend.stdout)")
        #expect(((try? String(contentsOfFile: notices, encoding: .utf8)) ?? "").contains("notice"), "SIGUSR1 reached the app")
        #expect(Kernel.cgroupFrozen(cgroup), "cgroup.events says frozen 1")
        #expect(((try? String(contentsOfFile: cgroup + "/cgroup.freeze", encoding: .utf8)) ?? "").hasPrefix("1"))
        #expect(Kernel.processState(outside.pid) == "S" || Kernel.processState(outside.pid) == "D")
        let frozenAt = Self.read(counter)
        usleep(300_000)
        #expect(Self.read(counter) == frozenAt, "the counter moved while frozen")

        let resume = try box.icebox(["resume", "counter"])
        #expect(resume.status == 0, "\(resume.output)")
        #expect(!Kernel.cgroupFrozen(cgroup))
        try Self.waitFor("the counter to advance") { (Self.read(counter) ?? 0) > (frozenAt ?? 0) }

        // Evicted by a memory budget it does not fit: killed, its cgroup removed.
        #expect(try box.icebox(["suspend", "--grace", "0", "counter"]).status == 0)
        let set = try box.icebox(["policy", "set", "--memory-budget", "1M", "--protect-active", "no"])
        #expect(set.status == 0, "\(set.output)")
        try Self.waitFor("the eviction") { try box.apps()["counter"]?.state == .evicted }
        #expect(!Kernel.alive(outside.pid), "the adopted process still runs")
        try Self.waitFor("its cgroup to go") { !FileManager.default.fileExists(atPath: cgroup) }
        let ended = try #require(try box.apps()["counter"])
        #expect(
            ended.ending?.contains("killed by SIGKILL") == true || ended.ending?.contains("status unknown") == true, "\(ended.ending ?? "")"
        )
    }

    @Test("a fork storm during the adoption leaves no task of the tree outside the app's cgroup")
    func forkStorm() throws {
        let box = Sandbox("adoptstorm")
        defer { box.close() }
        let script = box.dir + "/storm.py"
        // The parent forks without pause: most children exit at once, every fifth (up to 40)
        // lives on and forks a grandchild that lives on too.
        let source = """
            import os, time
            n, kept = 0, 0
            while True:
                n += 1
                keep = kept < 40 and n % 5 == 0
                if keep:
                    kept += 1
                pid = os.fork()
                if pid == 0:
                    if keep:
                        if os.fork() == 0:
                            time.sleep(1000)
                        time.sleep(1000)
                    os._exit(0)
                try:
                    while os.waitpid(-1, os.WNOHANG)[0] > 0:
                        pass
                except ChildProcessError:
                    pass
            """
        try source.write(toFile: script, atomically: true, encoding: .utf8)
        let storm = try Outside(["python3", script])
        defer { storm.kill() }
        try Self.waitFor("the storm to get going") { Self.tree(of: storm.pid).count > 20 }

        let adopt = try box.icebox(["adopt", "storm", "--pid", String(storm.pid)])
        #expect(adopt.status == 0, "\(adopt.output)")
        let cgroup = try #require(try box.apps()["storm"]?.cgroup)
        let adopted = try #require(box.events("storm").first { $0.kind == .adopted })
        #expect((adopted.tasks ?? 0) > 20 && adopted.durationNanos != nil, "\(adopted.detail)")
        // Every live process of the tree, as the kernel has it now, is inside.
        let tree = Self.tree(of: storm.pid).filter(Kernel.alive)
        #expect(tree.count > 20, "the tree: \(tree.count)")
        let outside = tree.filter { pid in Self.cgroup(of: pid).map { !CgroupMembership.isWithin($0, cgroup) } ?? false }
        #expect(outside.isEmpty, "outside the app's cgroup: \(outside.map { "\($0) in \(Self.cgroup(of: $0) ?? "?")" })")
        #expect(!Kernel.cgroupFrozen(cgroup), "thawed after the move")
        // It goes as a whole: a terminate kills everything in its cgroup.
        #expect(try box.icebox(["evict", "storm"]).status == 0)
        #expect(!Kernel.alive(storm.pid))
    }

    @Test("a cgroup with several processes is adopted whole, and released back into it")
    func adoptCgroupAndRelease() throws {
        let box = Sandbox("adoptcg")
        defer { box.close() }
        let source = try Self.makeCgroup(box, "src")
        defer { Self.removeCgroup(source) }
        // Started 20 ms apart, so that their start times (in clock ticks) tell the oldest.
        let sleepers = try (0..<3).map { _ in
            usleep(20_000)
            return try Outside(Self.sleeper)
        }
        defer { for s in sleepers { s.kill() } }
        for s in sleepers { try Self.move(s.pid, to: source) }
        #expect(Set(Sandbox.pids(in: source)) == Set(sleepers.map(\.pid)))

        let adopt = try box.icebox(["adopt", "group", "--cgroup", source])
        #expect(adopt.status == 0, "\(adopt.output)")
        let record = try #require(try box.apps()["group"])
        let cgroup = try #require(record.cgroup)
        #expect(record.pid == sleepers[0].pid, "the oldest is the main process")
        #expect(Sandbox.pids(in: source).isEmpty, "left behind in \(source): \(Sandbox.pids(in: source))")
        #expect(Set(Sandbox.pids(in: cgroup)) == Set(sleepers.map(\.pid)))

        #expect(try box.icebox(["suspend", "--grace", "0", "group"]).status == 0)
        #expect(Kernel.cgroupFrozen(cgroup))
        let release = try box.icebox(["release", "group"])
        #expect(release.status == 0, "\(release.output)")
        #expect(release.stdout.contains("where it came from"), "\(release.stdout)")
        #expect(Set(Sandbox.pids(in: source)) == Set(sleepers.map(\.pid)), "back in \(source)")
        #expect(!FileManager.default.fileExists(atPath: cgroup), "its cgroup is removed")
        for s in sleepers { #expect(Kernel.alive(s.pid), "released but gone") }
        #expect(!Kernel.cgroupFrozen(source), "thawed: the cgroup they are in now is not frozen")
        #expect(try box.apps()["group"] == nil, "still listed after the release")
        #expect(box.events("group").contains { $0.kind == .released && $0.durationNanos != nil })
    }

    @Test("release leaves a suspended adopted process running, unsupervised, thawed, in its origin cgroup")
    func releaseSuspended() throws {
        let box = Sandbox("adoptrel")
        defer { box.close() }
        let origin = try Self.makeCgroup(box, "origin")
        defer { Self.removeCgroup(origin) }
        let (script, counter, notices) = Self.counterScript(box)
        let outside = try Outside(["python3", script, counter, notices])
        defer { outside.kill() }
        try Self.move(outside.pid, to: origin)
        try Self.waitFor("the counter to start") { Self.read(counter) != nil }
        #expect(try box.icebox(["adopt", "counter", "--pid", String(outside.pid)]).status == 0)
        let cgroup = try #require(try box.apps()["counter"]?.cgroup)
        #expect(try box.icebox(["suspend", "--grace", "0", "counter"]).status == 0)
        #expect(Kernel.cgroupFrozen(cgroup))
        let frozenAt = Self.read(counter) ?? 0

        let release = try box.icebox(["release", "counter"])
        #expect(release.status == 0, "\(release.output)")
        #expect(Self.cgroup(of: outside.pid) == origin, "back in \(Self.cgroup(of: outside.pid) ?? "nil")")
        #expect(Kernel.alive(outside.pid))
        try Self.waitFor("the counter to advance") { (Self.read(counter) ?? 0) > frozenAt }
        #expect(!FileManager.default.fileExists(atPath: cgroup))
        let ps = try box.icebox(["ps", "--all", "--json"])
        #expect(!ps.stdout.contains("\"counter\""), "still supervised: \(ps.stdout)")
        #expect(try box.icebox(["suspend", "counter"]).status == 1, "a released app is no longer icebox's")
    }

    @Test("an adopted app is re-adopted by the next daemon after a SIGKILL, then terminated as any app")
    func readoptAfterDaemonCrash() throws {
        let box = Sandbox("adoptcrash")
        defer { box.close() }
        let outside = try Outside(Self.sleeper)
        defer { outside.kill() }
        #expect(try box.icebox(["adopt", "nap", "--pid", String(outside.pid)]).status == 0)
        let cgroup = try #require(try box.apps()["nap"]?.cgroup)
        try box.killDaemon()
        let after = try #require(try box.apps()["nap"], "the next daemon lost the adopted app")
        #expect(after.state == .active && after.pid == outside.pid && after.isAdopted)
        #expect(box.events("nap").contains { $0.kind == .adopt })
        #expect(Self.cgroup(of: outside.pid) == cgroup)
        let terminate = try box.icebox(["terminate", "nap"])
        #expect(terminate.status == 0, "\(terminate.output)")
        #expect(!Kernel.alive(outside.pid))
        #expect(try box.apps()["nap"]?.ending?.contains("status unknown") == true)
        #expect(!FileManager.default.fileExists(atPath: cgroup))
        // relaunch starts the command line read from /proc, and says so.
        let relaunch = try box.icebox(["relaunch", "nap"])
        defer { _ = try? box.icebox(["evict", "nap"]) }
        #expect(relaunch.status == 0 && relaunch.stdout.contains("read from /proc"), "\(relaunch.output)")
    }

    @Test("what cannot be adopted is refused with its reason and exit code, and nothing moves")
    func refusals() throws {
        let box = Sandbox("adoptno")
        defer { box.close() }
        #expect(try box.icebox(["launch", "sleeper", "--", "sleep", "1000"]).status == 0)
        let sleeper = try #require(try box.apps()["sleeper"])
        let daemon = try #require(box.daemonPID)
        let other = try Outside(Self.sleeper)
        defer { other.kill() }
        func refused(_ args: [String], _ code: Int32, _ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let r = try box.icebox(["adopt"] + args)
            #expect(r.status == code, "\(args): \(r.output)", sourceLocation: sourceLocation)
            #expect(r.stderr.contains(text), "\(args): \(r.stderr)", sourceLocation: sourceLocation)
        }
        var missing: pid_t = 4_000_000
        while FileManager.default.fileExists(atPath: "/proc/\(missing)") { missing -= 1 }
        try refused(["x", "--pid", String(missing)], 1, "no process with pid \(missing)")
        try refused(["x", "--pid", "1"], 64, "refusing to adopt pid 1")
        try refused(["x", "--pid", "2"], 64, "kernel thread")
        try refused(["x", "--pid", String(daemon)], 64, "holds this icebox daemon")
        try refused(["x", "--pid", String(getpid())], 64, "holds this icebox")
        try refused(["x", "--pid", String(sleeper.pid)], 1, "already in the app sleeper's cgroup")
        try refused(["sleeper", "--pid", String(other.pid)], 1, "an app named 'sleeper' is already running")
        try refused(["x"], 64, "give exactly one of --pid PID or --cgroup PATH")
        try refused(["x", "--cgroup", box.dir], 64, "not under a cgroup mount")

        // A systemd unit's cgroup (a cgroup named like one, with a process in it).
        let slice = try Self.makeCgroup(box, "units")
        defer { Self.removeCgroup(slice) }
        let unit = slice + "/x.slice/y.service"
        try FileManager.default.createDirectory(atPath: unit, withIntermediateDirectories: true)
        try Self.move(other.pid, to: unit)
        try refused(["x", "--pid", String(other.pid)], 77, "systemd unit y.service")
        try refused(["x", "--cgroup", unit], 77, "Delegate=yes")
        #expect(Self.cgroup(of: other.pid) == unit, "moved although refused")

        // A symbolic link to a cgroup.
        let link = box.dir + "/link"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: unit)
        try refused(["x", "--cgroup", link], 64, "symbolic link")
        #expect(try box.apps()["x"] == nil)
        #expect(Kernel.alive(other.pid) && Kernel.processState(other.pid) == "S")
    }

    @Test(
        "a daemon not running as root refuses another user's process (exit 77), naming the uid",
        .enabled(if: OtherUser.available, "needs root and setpriv (util-linux)"))
    func otherUsersProcess() throws {
        let box = Sandbox("adoptuid")
        defer { box.close() }
        let other = try OtherUser()
        defer { other.close() }
        let env = other.environment(of: box)
        defer { _ = try? other.icebox(["daemon", "--stop", "--terminate-apps"], environment: env) }
        let mine = try Outside(Self.sleeper)  // root's
        defer { mine.kill() }
        let origin = Self.cgroup(of: mine.pid)
        let r = try other.icebox(["adopt", "x", "--pid", String(mine.pid)], environment: env)
        #expect(r.status == 77, "\(r.output)")
        #expect(r.stderr.contains("belongs to uid 0") && r.stderr.contains("may not move or signal it"), "\(r.stderr)")
        #expect(Self.cgroup(of: mine.pid) == origin && Kernel.alive(mine.pid))
    }

    /// What a daemon killed in the middle of an adoption leaves: its record of intent (no move
    /// time yet) and the process in the app's cgroup, frozen. The next daemon undoes it.
    @Test("an adoption cut short by the daemon's death is undone by the next daemon: processes back where they were, thawed")
    func interruptedAdoptionIsUndone() throws {
        let box = Sandbox("adopthalf")
        defer { box.close() }
        let origin = try Self.makeCgroup(box, "origin")
        defer { Self.removeCgroup(origin) }
        let outside = try Outside(Self.sleeper)
        defer { outside.kill() }
        try Self.move(outside.pid, to: origin)
        let half = try #require(box.cgroupRoot) + "/half"
        try FileManager.default.createDirectory(atPath: half, withIntermediateDirectories: true)
        try "1".write(toFile: half + "/cgroup.freeze", atomically: false, encoding: .utf8)
        try Self.move(outside.pid, to: half)
        try Self.waitFor("the move's freeze") { Kernel.cgroupFrozen(half) }
        var record = AppRecord(
            name: "half", options: LaunchOptions(name: "half", command: Self.sleeper), pid: outside.pid, state: .active,
            sinceMonotonicNanos: 0, sinceWall: "", launchedWall: "", backend: .cgroup2, cgroup: half)
        record.startTicks = try #require(ProcFS.stat(pid: outside.pid)).startTimeTicks
        record.adoptedFrom = origin
        let registry = box.stateDir + "/registry"
        try FileManager.default.createDirectory(atPath: registry, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        chmod(box.stateDir, 0o700)
        try Registry.write(record, directory: registry, durable: false)

        let apps = try box.apps()  // starts the next daemon
        #expect(apps["half"] == nil, "taken over half moved: \(apps["half"].map { "\($0.state)" } ?? "")")
        #expect(Self.cgroup(of: outside.pid) == origin, "not moved back: \(Self.cgroup(of: outside.pid) ?? "nil")")
        #expect(!Kernel.cgroupFrozen(origin) && Kernel.alive(outside.pid))
        #expect(!FileManager.default.fileExists(atPath: half), "the half-made cgroup stays")
        #expect(box.events("half").contains { $0.detail.contains("cut short") }, "\(box.events("half").map(\.detail))")
    }

    @Test(
        "adopted with the cgroup v1 freezer: suspend writes FROZEN, release hands it back thawed",
        .enabled(if: Sandbox.writableMounts.freezerV1 != nil, "\(LifecycleTests.freezerV1Reason)"))
    func backendCgroup1() throws { try otherBackend("cgroup1") }

    @Test("adopted with the signal backend: suspend SIGSTOPs it, release SIGCONTs it")
    func backendSignal() throws { try otherBackend("signal") }

    /// The move is held by the v2 cgroup whatever the backend; the freeze is the backend's.
    func otherBackend(_ backend: String) throws {
        let box = Sandbox("adopt\(backend)")
        defer { box.close() }
        let outside = try Outside(Self.sleeper)
        defer { outside.kill() }
        let origin = Self.cgroup(of: outside.pid)
        let adopt = try box.icebox(["adopt", "nap", "--pid", String(outside.pid), "--backend", backend])
        #expect(adopt.status == 0, "\(adopt.output)")
        let record = try #require(try box.apps()["nap"])
        #expect(record.backend.rawValue == backend)
        #expect(try box.icebox(["suspend", "--grace", "0", "nap"]).status == 0)
        if backend == "cgroup1" {
            let freezer = try #require(record.freezerV1)
            #expect(Kernel.freezerState(freezer) == "FROZEN")
            #expect(Sandbox.pids(in: freezer) == [outside.pid])
        } else {
            #expect(Kernel.processState(outside.pid) == "T", "SIGSTOPped")
        }
        let release = try box.icebox(["release", "nap"])
        #expect(release.status == 0, "\(release.output)")
        #expect(Self.cgroup(of: outside.pid) == origin)
        try Self.waitFor("it to run again") { Kernel.processState(outside.pid) == "S" }
        if let freezer = record.freezerV1 { #expect(!FileManager.default.fileExists(atPath: freezer)) }
    }

    @Test("a launched app can be released too: it goes to the daemon's own cgroup and keeps running")
    func releaseLaunched() throws {
        let box = Sandbox("adoptrell")
        defer { box.close() }
        #expect(try box.icebox(["launch", "nap", "--", "sleep", "1000"]).status == 0)
        let record = try #require(try box.apps()["nap"])
        defer { kill(record.pid, SIGKILL) }
        let daemon = try #require(box.daemonPID)
        let release = try box.icebox(["release", "nap"])
        #expect(release.status == 0, "\(release.output)")
        #expect(release.stdout.contains("launched, not adopted"), "\(release.stdout)")
        #expect(Self.cgroup(of: record.pid) == Self.cgroup(of: daemon), "not in the daemon's own cgroup")
        #expect(Kernel.alive(record.pid))
        #expect(try box.apps()["nap"] == nil)
        #expect(!FileManager.default.fileExists(atPath: record.cgroup ?? "/nonexistent"))
    }

    /// Without cgroup v2 the v1 freezer holds the move: FROZEN before anything enters it.
    @Test(
        "v1 only (no cgroup2 mount): the move is held by the v1 freezer, suspend and release work",
        .enabled(if: Sandbox.writableMounts.freezerV1 != nil, "this host has no v1 freezer hierarchy to keep"))
    func v1OnlyHost() throws {
        let world = try HostLayoutWorld(.v1Only)
        defer { world.close() }
        let outside = try Outside(Self.sleeper)
        defer { outside.kill() }
        let adopt = try world.icebox(["adopt", "nap", "--pid", String(outside.pid)])
        #expect(adopt.status == 0, "\(adopt.output)")
        let record = try #require(try world.apps()["nap"])
        #expect(record.backend == .cgroup1 && record.cgroup == nil)
        let freezer = world.seen(try #require(record.freezerV1))
        #expect(Sandbox.pids(in: freezer) == [outside.pid])
        #expect(Kernel.freezerState(freezer) == "THAWED", "thawed after the move")
        #expect(try world.icebox(["suspend", "--grace", "0", "nap"]).status == 0)
        #expect(Kernel.freezerState(freezer) == "FROZEN")
        let release = try world.icebox(["release", "nap"])
        #expect(release.status == 0, "\(release.output)")
        #expect(!FileManager.default.fileExists(atPath: freezer))
        try Self.waitFor("it to run again") { Kernel.processState(outside.pid) == "S" }
    }

    @Test("no cgroups at all: adopt is refused (exit 69), nothing to move the tree into")
    func noCgroupsHost() throws {
        let world = try HostLayoutWorld(.none)
        defer { world.close() }
        let outside = try Outside(Self.sleeper)
        defer { outside.kill() }
        let adopt = try world.icebox(["adopt", "nap", "--pid", String(outside.pid)])
        #expect(adopt.status == 69, "\(adopt.output)")
        #expect(adopt.stderr.contains("no cgroup icebox can move it into"), "\(adopt.stderr)")
        #expect(Kernel.alive(outside.pid) && Kernel.processState(outside.pid) != "T")
    }

    @Test("an app attached to icebox run is not released: its run waits for its exit status")
    func releaseAttachedRefused() throws {
        let box = Sandbox("adoptrun")
        defer { box.close() }
        let run = Process()
        run.executableURL = URL(fileURLWithPath: Sandbox.binary)
        run.arguments = ["run", "--name", "att", "--", "sleep", "1000"]
        run.environment = box.environment
        run.standardInput = FileHandle.nullDevice
        run.standardOutput = FileHandle.nullDevice
        run.standardError = FileHandle.nullDevice
        try run.run()
        defer {
            kill(run.processIdentifier, SIGKILL)
            run.waitUntilExit()
        }
        try Self.waitFor("the attached app") { try box.apps()["att"]?.state == .active }
        let release = try box.icebox(["release", "att"])
        #expect(release.status == 1 && release.stderr.contains("attached to an icebox run"), "\(release.output)")
        #expect(try box.apps()["att"]?.state == .active)
    }
}

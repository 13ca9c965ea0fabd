import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// A daemon SIGKILLed during a `--user` launch (issue 33): the app gets a notify socket in a
/// private directory under /tmp, which the next daemon must recognise it by. Whatever the
/// point of the kill, the next daemon either re-adopts the app (with a notify socket that
/// works) or kills it and removes its cgroups and that directory, and says which; the name
/// can be launched again; `daemon --stop --terminate-apps` ends it. Judged from /proc, the
/// cgroup files and the file system.
@Suite(
    .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"),
    .enabled(if: UserAccounts.user(named: "nobody") != nil, "needs the user nobody"), .timeLimit(.minutes(5)))
struct UserLaunchCrashTests {
    /// An app that says READY=1 on SIGUSR2 (readiness, when the test chooses) and answers the
    /// notice (SIGUSR1) with READY=1, so that a suspend shows whether its socket works. A send
    /// that fails (no daemon bound to the socket yet) is ignored.
    static let app = """
        import os, signal, socket, time
        def notify(m):
            try: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(m, os.environ['NOTIFY_SOCKET'])
            except OSError: pass
        signal.signal(signal.SIGUSR1, lambda *a: notify(b'READY=1\\nSTATUS=saved'))
        signal.signal(signal.SIGUSR2, lambda *a: notify(b'READY=1'))
        while True: time.sleep(0.05)
        """

    /// Where the kill lands.
    enum Point: String, CaseIterable {
        /// The app's cgroup made and its notify directory bound, the daemon blocked opening the
        /// app's log (a FIFO put there): nothing spawned yet.
        case beforeSpawn
        /// Cloned into its cgroup, not yet exec'd (the cgroup root frozen holds it there, and
        /// the daemon waits for the exec): the record says launching, with no pid.
        case duringSpawn
        /// `--ready notify`, the app spawned and recorded, the launch waiting for READY=1.
        case waitingReady
        /// Right after `launch` returned.
        case afterLaunch
    }

    /// A fresh launch of `name` as nobody, the daemon SIGKILLed at `point`; then a new daemon
    /// (`ps`), and the checks. Returns what is wrong.
    func trial(_ point: Point, iteration: Int) throws -> [String] {
        let box = Sandbox("usercrash\(point.rawValue)\(iteration)")
        var privateDir: String?
        defer {
            if let root = box.cgroupRoot { try? "0".write(toFile: root + "/cgroup.freeze", atomically: false, encoding: .utf8) }
            box.close()
            if let privateDir {
                unlink(privateDir + "/notify")
                rmdir(privateDir)
            }
        }
        let cgroupRoot = try #require(box.cgroupRoot)
        let name = "u\(iteration)"
        // A daemon first, so the fault lands in the launch, not in the daemon's start.
        try #require(try box.icebox(["launch", "--grace", "0", "keep", "--", "sleep", "1000"]).status == 0)
        let usesStandIn = Sandbox.mounts.freezerV1 != nil || Sandbox.mounts.memoryV1 != nil
        let fifo = box.stateDir + "/logs/\(name).log"
        var launchArgs = ["launch", "--no-autostart", "--user", "nobody", "--cwd", "/", "--grace", "20s"]
        switch point {
        case .beforeSpawn:
            #expect(mkfifo(fifo, 0o600) == 0, "mkfifo \(fifo): \(errno)")
        case .duringSpawn:
            // The keeper goes first: a frozen root freezes it too.
            #expect(try box.icebox(["terminate", "keep"]).status == 0)
            // Where the host has v1 hierarchies, a parked spawn stand-in clones the app (the
            // keeper took the first): the app's child then outlives the daemon and execs. (One
            // the daemon clones itself runs in the daemon's address space until its execve,
            // and was seen to die with it: then there is nothing to adopt, only to clear.)
            if usesStandIn {
                #expect(eventually { !box.standIns().isEmpty }, "no spawn stand-in was parked")
            }
            try "1".write(toFile: cgroupRoot + "/cgroup.freeze", atomically: false, encoding: .utf8)
        case .waitingReady:
            launchArgs += ["--ready", "notify", "--ready-timeout", "60s"]
        case .afterLaunch:
            break
        }
        let daemon = try #require(box.daemonPID)
        let launch = Process()
        launch.executableURL = URL(fileURLWithPath: Sandbox.binary)
        launch.arguments = launchArgs + [name, "--", "/usr/bin/python3", "-c", Self.app]
        launch.environment = box.environment
        launch.standardOutput = FileHandle.nullDevice
        launch.standardError = FileHandle.nullDevice
        try launch.run()
        defer {
            if launch.isRunning { kill(launch.processIdentifier, SIGKILL) }
            launch.waitUntilExit()
        }
        let cgroup = cgroupRoot + "/" + name
        let record = box.stateDir + "/registry/\(name).json"
        switch point {
        case .beforeSpawn:
            // Blocked in open(2) of the log: the daemon holds the bound socket.
            #expect(
                eventually { Self.notifySockets(of: daemon).first != nil },
                "the daemon bound no private notify socket: \(Kernel.descriptorTargets(daemon)), \(String(describing: Self.recorded(record)))"
            )
            privateDir = Self.notifySockets(of: daemon).first.map { String($0.dropLast("/notify".count)) }
        case .duringSpawn:
            #expect(eventually { !Sandbox.pids(in: cgroup).isEmpty }, "nothing was cloned into \(cgroup)")
            let saved = JSONLines.decode(AppRecord.self, (try? String(contentsOfFile: record, encoding: .utf8)) ?? "")
            #expect(saved?.state == .launching && saved?.pid == 0, "the record: \(String(describing: saved))")
        case .waitingReady:
            #expect(eventually { Self.recorded(record)?.pid ?? 0 != 0 }, "the launch recorded no pid")
        case .afterLaunch:
            launch.waitUntilExit()
            #expect(launch.terminationStatus == 0)
        }
        try box.killDaemon()
        if point == .beforeSpawn { unlink(fifo) }
        if point == .duringSpawn {
            // Let it exec (its parent, the daemon, is gone): it runs, marked, before the next daemon looks.
            try "0".write(toFile: cgroupRoot + "/cgroup.freeze", atomically: false, encoding: .utf8)
            let execed = eventually {
                let pids = Sandbox.pids(in: cgroup)
                return pids.contains { Self.commandLine($0).first == "/usr/bin/python3" } || (!usesStandIn && pids.isEmpty)
            }
            #expect(execed, "\(Sandbox.pids(in: cgroup).map { ($0, Self.commandLine($0), Kernel.processState($0) ?? "?") })")
        }
        let appPID = Sandbox.pids(in: cgroup).first { Self.commandLine($0).first == "/usr/bin/python3" }
        // Its handlers in place (SIGUSR1 and SIGUSR2 caught), or a signal would kill it.
        if let appPID { #expect(eventually { Self.catches(appPID, [SIGUSR1, SIGUSR2]) }, "the app never set its handlers") }
        if let appPID, let socket = Self.notifySocket(of: appPID) { privateDir = String(socket.dropLast("/notify".count)) }
        if point != .beforeSpawn && (point != .duringSpawn || usesStandIn) { #expect(appPID != nil, "no app in \(cgroup)") }

        var problems: [String] = []
        let apps = try box.apps()  // a new daemon, which adopts or clears
        let after = try #require(apps[name], "no record of \(name): \(apps.keys.sorted())")
        if let appPID, Kernel.alive(appPID) {
            // Re-adopted: live, its pid, its socket nobody's again, and working.
            if after.state.isEnded || after.pid != appPID {
                problems.append("the app runs (pid \(appPID)) but ps says \(after.state.rawValue), pid \(after.pid): \(after.ending ?? "")")
                return problems
            }
            if !box.events(name).contains(where: { $0.kind == .adopt }) { problems.append("no adopt event") }
            if after.state == .launching { kill(appPID, SIGUSR2) }  // READY=1
            if !eventually(10, { (try? box.apps()[name]?.state) == .active }) { problems.append("never active after adoption") }
            let socket = after.notifySocket ?? ""
            if privateDir == nil || !socket.hasPrefix(privateDir! + "/") {
                problems.append("socket \(socket), the app's dir \(privateDir ?? "?")")
            }
            let status = (try? FileIO.linkStatus(socket)) ?? nil
            if status?.kind != .socket || status?.owner != 65534 {
                problems.append("socket \(socket) not nobody's: \(String(describing: status))")
            }
            let suspended = try box.icebox(["suspend", name])
            if suspended.status != 0 || !suspended.stdout.contains("(READY=1)") {
                problems.append("suspend without READY=1 through the socket: \(suspended.output)")
            }
            if !Kernel.cgroupFrozen(cgroup) { problems.append("suspended, yet \(cgroup) is not frozen") }
            let stopped = try box.icebox(["daemon", "--stop", "--terminate-apps"])
            if stopped.status != 0 { problems.append("daemon --stop --terminate-apps: \(stopped.output)") }
            if Kernel.alive(appPID) { problems.append("daemon --stop --terminate-apps left pid \(appPID) running") }
        } else {
            // Cleared: recorded as ended, with why.
            if !after.state.isEnded { problems.append("ps says \(after.state.rawValue) for an app that is gone") }
            if !box.events(name).contains(where: { $0.detail.contains("launch interrupted") }) {
                problems.append("no event says the launch was interrupted")
            }
        }
        problems += leftovers(box, name: name, privateDir: privateDir)
        // The name can be launched again, and that one goes with its own socket's directory too.
        let again = try box.icebox(["launch", "--user", "nobody", "--cwd", "/", name, "--", "sleep", "1000"])
        if again.status != 0 { problems.append("the name cannot be launched again: \(again.output)") }
        let second = try box.apps()[name]?.notifySocket
        let ended = try box.icebox(["terminate", name])
        if ended.status != 0 { problems.append("terminate the relaunched app: \(ended.output)") }
        if let second, FileManager.default.fileExists(atPath: String(second.dropLast("/notify".count))) {
            problems.append("the relaunched app's notify directory \(second) stayed")
        }
        if !problems.isEmpty { problems.append("events: \(box.events(name).map(\.detail))") }
        return problems.map { "\(point.rawValue) #\(iteration): \($0)" }
    }

    /// What is left of app `name` once it should be gone: processes, cgroups in any hierarchy,
    /// its private notify directory.
    func leftovers(_ box: Sandbox, name: String, privateDir: String?) -> [String] {
        var out: [String] = []
        let memoryRoot = HostFacts.discover(cgroupRootOverride: box.cgroupRoot).memoryV1Root
        for root in [box.cgroupRoot, box.freezerRoot, memoryRoot].compactMap({ $0 }) {
            let dir = root + "/" + name
            if FileManager.default.fileExists(atPath: dir) { out.append("cgroup \(dir) stayed (pids \(Sandbox.pids(in: dir)))") }
        }
        if let privateDir, FileManager.default.fileExists(atPath: privateDir) { out.append("notify directory \(privateDir) stayed") }
        return out
    }

    static func recorded(_ path: String) -> AppRecord? {
        JSONLines.decode(AppRecord.self, (try? String(contentsOfFile: path, encoding: .utf8)) ?? "")
    }

    /// Whether `pid` has a handler for each of `signals` (SigCgt in /proc/PID/status).
    static func catches(_ pid: pid_t, _ signals: [Int32]) -> Bool {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let mask = ProcFS.statusField("SigCgt", in: status).flatMap { UInt64($0, radix: 16) } ?? 0
        return signals.allSatisfy { mask & (1 << UInt64($0 - 1)) != 0 }
    }

    static func commandLine(_ pid: pid_t) -> [String] {
        ((try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? "").split(separator: "\0").map(String.init)
    }

    /// NOTIFY_SOCKET in the process's initial environment.
    static func notifySocket(of pid: pid_t) -> String? {
        let env = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ"))) ?? Data()
        return env.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }.first { $0.hasPrefix("NOTIFY_SOCKET=") }
            .map { String($0.dropFirst("NOTIFY_SOCKET=".count)) }
    }

    /// The private notify sockets `pid` holds bound: its socket descriptors' inodes, named
    /// in /proc/net/unix.
    static func notifySockets(of pid: pid_t) -> [String] {
        let inodes = Set(
            Kernel.descriptorTargets(pid).compactMap { target -> String? in
                guard target.hasPrefix("socket:[") else { return nil }
                return String(target.dropFirst("socket:[".count).dropLast())
            })
        let table = (try? FileIO.read("/proc/net/unix")) ?? ""
        return table.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 8, inodes.contains(String(fields[6])), fields[7].hasPrefix("/tmp/icebox-notify-") else { return nil }
            return String(fields[7])
        }
    }

    func eventually(_ seconds: Double = 10, _ condition: () -> Bool) -> Bool {
        Scenario.eventually(seconds: seconds, condition)
    }

    @Test("killed before the spawn (its notify directory made): the next daemon removes the directory and the cgroups")
    func beforeSpawn() throws {
        for i in 0..<2 { let p = try trial(.beforeSpawn, iteration: i); #expect(p.isEmpty, "\(p)") }
    }

    @Test("killed during the spawn (record says launching, no pid): the next daemon adopts the app, its notify socket working")
    func duringSpawn() throws {
        for i in 0..<3 { let p = try trial(.duringSpawn, iteration: i); #expect(p.isEmpty, "\(p)") }
    }

    @Test("killed while a --ready notify launch waits: the next daemon adopts it, and READY=1 arrives")
    func waitingReady() throws {
        for i in 0..<2 { let p = try trial(.waitingReady, iteration: i); #expect(p.isEmpty, "\(p)") }
    }

    @Test("killed right after launch returned: the next daemon adopts it")
    func afterLaunch() throws {
        for i in 0..<2 { let p = try trial(.afterLaunch, iteration: i); #expect(p.isEmpty, "\(p)") }
    }
}

import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import IceboxTestSupport
import Testing

/// One isolated icebox world per test: its own runtime directory, state directory and
/// cgroup root, so tests run in parallel and never see each other's daemon. `close()`
/// stops the daemon (which terminates its apps) and removes everything the test made.
///
/// The cgroup root is made on whatever the host has, so the integration tests run on every
/// layout icebox supports (`Sandbox.backend`): under cgroup2 where it can be written, else
/// in the v1 freezer hierarchy, else none at all (the daemon freezes with SIGSTOP). A test
/// that needs more than that says so with `cgroup2Missing` or `cgroupMissing`.
final class Sandbox: @unchecked Sendable {  // used by one test at a time; the class exists for its deinit-free cleanup
    let dir: String
    let runtimeDir: String
    let stateDir: String
    /// ICEBOX_CGROUP_ROOT: under the cgroup2 mount (`backend` cgroup2), in the v1 freezer
    /// hierarchy (cgroup1), or nil where neither can be written (signal: none is asked for).
    let cgroupRoot: String?
    /// The directory of the same name in the v1 freezer hierarchy, where there is one: the
    /// daemon's v1 freezer root (`cgroupRoot` itself under cgroup1).
    let freezerRoot: String?

    static let mounts = CgroupMounts.read()

    /// The hierarchies of `mounts` a test may make cgroups in (as root, not mounted
    /// read-only): what a condition for the v1 freezer or v1 memory hierarchy asks about.
    static let writableMounts: CgroupMounts = {
        var usable = mounts
        let writable = { (mount: String?) in mount.flatMap { getuid() == 0 && cgroupMountReadOnly($0) == nil ? $0 : nil } }
        usable.unified = writable(mounts.unified)
        usable.freezerV1 = writable(mounts.freezerV1)
        usable.memoryV1 = writable(mounts.memoryV1)
        return usable
    }()

    /// The backend the daemon's `auto` picks for a sandbox here: the hierarchy its cgroup
    /// root is made in. Mirrors `HostFacts.resolve(.auto)` for a root the test may make: a
    /// cgroup2 mount that can be written, else a v1 freezer hierarchy that can, else signal.
    static let backend: BackendKind = {
        if cgroup2Unwritable(mounts.unified) == nil { return .cgroup2 }
        if writableMounts.freezerV1 != nil { return .cgroup1 }
        return .signal
    }()

    /// Why integration tests cannot run here, or nil if they can. Any cgroup layout will do
    /// (`backend`); what a test needs beyond that it says itself (`cgroup2Missing`, `cgroupMissing`).
    static var unavailableReason: String? {
        getuid() != 0 ? "integration tests need root (or a delegated cgroup subtree)" : nil
    }

    /// Why a test that needs a cgroup2 root of its own (it reads or writes cgroup v2 files
    /// under it, asks for --backend cgroup2, uses cgroup.kill) cannot run here, or nil.
    static var cgroup2Missing: String? {
        if let reason = unavailableReason { return reason }
        return cgroup2Unwritable(mounts.unified).map { "needs a cgroup2 root: \($0)" }
    }

    /// Why a test that needs its apps in a cgroup freezer (cgroup2 or the v1 freezer: a cgroup
    /// per app, its processes counted and killed through it) cannot run here, or nil.
    static var cgroupMissing: String? {
        if let reason = unavailableReason { return reason }
        if backend != .signal { return nil }
        return "needs a cgroup freezer: no writable cgroup2 or v1 freezer hierarchy (the signal backend has no cgroups)"
    }

    /// Why an app here has no memory counter in a cgroup (memory.current or v1's
    /// memory.usage_in_bytes), or nil. Without one icebox sums the processes' Pss instead: a
    /// pure cgroup2 tree whose memory controller is bound to v1 elsewhere (the pure-v2 layout
    /// scripts/test-layouts makes from a hybrid host) has none.
    static var cgroupMemoryCounterMissing: String? {
        if writableMounts.memoryV1 != nil { return nil }
        let controllers = writableMounts.unified.flatMap { try? String(contentsOfFile: $0 + "/cgroup.controllers", encoding: .utf8) } ?? ""
        if controllers.split(whereSeparator: \.isWhitespace).contains("memory") { return nil }
        return "no cgroup memory counter: no v1 memory hierarchy, and the cgroup2 tree has no memory controller"
    }

    /// A fresh directory under $TMPDIR (else /tmp), made with mkdtemp: `prefix-XXXXXX`.
    static func temporaryDirectory(_ prefix: String) -> String {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/\(prefix)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        return String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    init(_ label: String = #function) {
        let cleaned = label.filter { $0.isLetter || $0.isNumber }.prefix(20)
        // Short: notify socket paths inside must fit sun_path (107 bytes).
        dir = Sandbox.temporaryDirectory("icebox-test-\(cleaned)")
        runtimeDir = dir + "/run"
        stateDir = dir + "/state"
        let unique = "icebox-test-" + String(dir.split(separator: "-").last!) + "-\(cleaned)"
        freezerRoot = Sandbox.backend == .signal ? nil : Sandbox.mounts.freezerV1.map { $0 + "/" + unique }
        switch Sandbox.backend {
        case .cgroup2: cgroupRoot = Sandbox.mounts.unified.map { $0 + "/" + unique }
        case .cgroup1: cgroupRoot = freezerRoot
        case .signal: cgroupRoot = nil
        }
    }

    var environment: [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["ICEBOX_RUNTIME_DIR"] = runtimeDir
        env["ICEBOX_STATE_DIR"] = stateDir
        // Without a root of its own none is asked for: one that cannot be used is an error.
        env["ICEBOX_CGROUP_ROOT"] = cgroupRoot
        env.removeValue(forKey: "ICEBOX_NO_AUTOSTART")
        return env
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        var output: String { stdout + stderr }
    }

    /// The icebox binary under test: the build's, or ICEBOX_TEST_BINARY (to show that a test
    /// fails against an older binary).
    static var binary: String {
        if let given = ProcessInfo.processInfo.environment["ICEBOX_TEST_BINARY"], !given.isEmpty { return given }
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // The test bundle lives beside the icebox binary in .build/<triple>/debug.
        while !FileManager.default.fileExists(atPath: dir.appendingPathComponent("icebox").path) && dir.path != "/" {
            dir = dir.deletingLastPathComponent()
        }
        return dir.appendingPathComponent("icebox").path
    }

    /// Runs icebox with the sandbox's environment; waits at most `timeout` seconds.
    @discardableResult
    func icebox(
        _ args: [String], stdin: String? = nil, extraEnv: [String: String] = [:], timeout: Double = 30, withoutInotify: Bool = false
    ) throws -> Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: withoutInotify ? HostLayoutWorld.unshare : Sandbox.binary)
        p.arguments = withoutInotify ? Self.withoutInotify + [Sandbox.binary] + args : args
        p.environment = environment.merging(extraEnv) { $1 }
        return try Sandbox.runToEnd(p, stdin: stdin, timeout: timeout, what: "icebox \(args.joined(separator: " "))")
    }

    /// inotify instances are counted per user, for all of the user's processes
    /// (`fs.inotify.max_user_instances`, 128 by default): a command started when others hold
    /// them all must still work. These arguments to unshare(1), then a command, run it in a
    /// user namespace whose limit is 0, which gives that refusal for real (EMFILE). Its
    /// children (a daemon it starts, and the apps) stay there.
    static let withoutInotify = [
        "--user", "--map-root-user", "--", "/bin/sh", "-c", "echo 0 > /proc/sys/user/max_inotify_instances && exec \"$@\"", "sh",
    ]

    /// Why this process cannot have an inotify instance now (the user's are shared by all of
    /// their processes, and others may hold them all); nil: it can.
    static var inotifyRefusal: String? {
        do {
            _ = try Inotify()
            return nil
        } catch {
            return "the kernel refuses this process an inotify instance: \(error)"
        }
    }

    /// Why `withoutInotify` cannot be used here; nil: it can.
    static var withoutInotifyRefusal: String? {
        FileManager.default.isExecutableFile(atPath: HostLayoutWorld.unshare)
            ? OtherUser.userNamespaceRefusal : "needs \(HostLayoutWorld.unshare) (util-linux)"
    }

    /// Runs a configured Process with piped stdin (given text, then closed), stdout and stderr,
    /// reads both outputs to the end, and waits; past `timeout` seconds it is killed and the
    /// hang recorded as an issue. Shared by every test helper that runs a program.
    static func runToEnd(_ p: Process, stdin: String? = nil, timeout: Double, what: String) throws -> Result {
        let out = Pipe(), err = Pipe(), input = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = input
        try p.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        // Read both pipes to the end (the process exits, or is killed at the deadline).
        let deadline = DispatchTime.now() + timeout
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var outData = Data(), errData = Data()  // written by the two readers, read after both signal
        DispatchQueue.global().async {
            outData = out.fileHandleForReading.readDataToEndOfFile(); done.signal()
        }
        DispatchQueue.global().async {
            errData = err.fileHandleForReading.readDataToEndOfFile(); done.signal()
        }
        if done.wait(timeout: deadline) == .timedOut || done.wait(timeout: deadline) == .timedOut {
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            Issue.record("\(what) did not finish within \(timeout)s")
        }
        p.waitUntilExit()
        return Result(
            status: p.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }

    /// The apps as `icebox ps --json --all` reports them.
    func apps() throws -> [String: AppRecord] {
        let r = try icebox(["ps", "--json", "--all"])
        let list = JSONLines.decode([AppRecord].self, r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? []
        return Dictionary(list.map { ($0.name, $0) }, uniquingKeysWith: { $1 })
    }

    func events(_ app: String? = nil) -> [Event] {
        let text = (try? String(contentsOfFile: stateDir + "/events.jsonl", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { JSONLines.decode(Event.self, String($0)) }.filter { app == nil || $0.app == app }
    }

    /// Stops the daemon (terminating every app), then removes the cgroups and directories.
    /// Safe to call after a failed test: it kills whatever is left in the cgroups.
    func close() {
        // Without a root of its own the test made no cgroups (a memory root found for the
        // default one would be the host's icebox's, not the test's).
        let memoryRoot = cgroupRoot.flatMap { HostFacts.discover(cgroupRootOverride: $0).memoryV1Root }
        _ = try? icebox(["daemon", "--stop", "--terminate-apps"], timeout: 20)
        // Under cgroup1 the root and the freezer root are one directory.
        var roots: [String] = []
        for root in [cgroupRoot, freezerRoot, memoryRoot].compactMap({ $0 }) where !roots.contains(root) { roots.append(root) }
        Sandbox.removeCgroupTrees(roots)
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// Kills every process in the cgroup trees at `roots` (frozen ones too) and removes their
    /// cgroups bottom up, each root last: what a test made, removed even when it failed.
    /// Every tree is thawed and killed before any is removed: a task frozen in the v1
    /// freezer dies of SIGKILL only once thawed, and holds its cgroups in the other
    /// hierarchies until then (removing tree by tree, a v1 memory cgroup stayed behind when
    /// its app's freezer came later in the list).
    static func removeCgroupTrees(_ roots: [String]) {
        for root in roots { killCgroupTree(root) }
        for root in roots { removeKilledCgroupTree(root) }
    }

    /// The cgroups of the tree at `root`, children first, `root` last.
    static func cgroupTree(_ root: String) -> [String] {
        guard FileManager.default.fileExists(atPath: root + "/cgroup.procs") else { return [] }
        let children = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).filter {
            FileManager.default.fileExists(atPath: root + "/" + $0 + "/cgroup.procs")
        }
        return children.flatMap { cgroupTree(root + "/" + $0) } + [root]
    }

    private static func killCgroupTree(_ root: String) {
        for path in cgroupTree(root) {
            try? "1".write(toFile: path + "/cgroup.kill", atomically: false, encoding: .utf8)
            for pid in Sandbox.pids(in: path) { kill(pid, SIGKILL) }
            try? "THAWED".write(toFile: path + "/freezer.state", atomically: false, encoding: .utf8)
        }
    }

    private static func removeKilledCgroupTree(_ root: String) {
        for path in cgroupTree(root) {
            if FileManager.default.fileExists(atPath: path + "/cgroup.events") {
                _ = try? Cgroup2(path: path).waitForEvents(until: Clock.monotonicNanos() + 5_000_000_000) { !$0.populated }
            }
            // v1 has no event for "empty": retry rmdir (EBUSY) for up to a second.
            for _ in 0..<100 where rmdir(path) != 0 && errno == EBUSY { usleep(10_000) }
        }
    }

    /// The running daemon's pid, from its lock file (nil: none has run yet).
    var daemonPID: pid_t? {
        (try? String(contentsOfFile: runtimeDir + "/daemon.lock", encoding: .utf8)).flatMap {
            pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    /// SIGKILLs the running daemon and waits (through a pidfd) until it is gone, its files
    /// (its lock too) closed.
    func killDaemon() throws {
        let pid = try #require(daemonPID)
        let handle = try ProcessHandle(adopting: pid)
        kill(pid, SIGKILL)
        var pfd = pollfd(fd: handle.pidfd, events: Int16(POLLIN), revents: 0)
        #expect(poll(&pfd, 1, 5000) == 1, "the daemon did not die")
    }

    /// The daemon's spawn stand-ins (SpawnPool): its children that sit in a parked
    /// `.stand-in-*` v1 cgroup.
    func standIns() -> [pid_t] {
        guard let daemon = daemonPID else { return [] }
        return Kernel.children(of: daemon).filter {
            ((try? String(contentsOfFile: "/proc/\($0)/cgroup", encoding: .utf8)) ?? "").contains("/.stand-in-")
        }
    }

    /// Launches `anchor` so that the daemon parks a spawn stand-in, and stops that stand-in
    /// with SIGSTOP: the next launch through it gets no answer (it neither spawns nor exits
    /// when let go; SIGKILL still ends it). Returns the stand-in.
    func stoppedStandIn() throws -> pid_t {
        _ = try icebox(["launch", "anchor", "--", "sleep", "1000"])
        try #require(Scenario.eventually { self.standIns().count == 1 })
        let standIn = standIns()[0]
        kill(standIn, SIGSTOP)
        try #require(Scenario.eventually { Kernel.processState(standIn) == "T" })
        return standIn
    }

    /// `icebox ARGUMENTS` run on a thread of its own (not the shared dispatch pool, which a
    /// command that lasts, such as `run`, would hold), for a test that acts while it waits.
    final class Background: @unchecked Sendable {  // `result` is written before `done` is signalled, read after
        private let done = DispatchSemaphore(value: 0)
        private var result: Result?
        private var finished = false

        init(_ box: Sandbox, _ arguments: [String], extraEnv: [String: String] = [:], withoutInotify: Bool = false) {
            Thread {
                self.result = try? box.icebox(arguments, extraEnv: extraEnv, withoutInotify: withoutInotify)
                self.done.signal()
            }.start()
        }

        /// The command's result once it ends within `seconds`, else nil.
        func result(within seconds: Double) -> Result? {
            if !finished { finished = done.wait(timeout: .now() + seconds) == .success }
            return finished ? result : nil
        }
    }

    static func pids(in cgroup: String) -> [pid_t] {
        ((try? String(contentsOfFile: cgroup + "/cgroup.procs", encoding: .utf8)) ?? "").split(separator: "\n").compactMap { pid_t($0) }
    }

    /// A Python app that speaks the protocol: READY=1 at start (and STATUS), and on SIGUSR1
    /// saves its state and acknowledges with READY=1 (or asks for more time, per `onNotice`).
    func pythonApp(onNotice: String = "notify('READY=1')", extra: String = "") -> String {
        let path = dir + "/app.py"
        let source = """
            import os, signal, socket, time
            def notify(msg):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                s.sendto(msg.encode(), os.environ['NOTIFY_SOCKET'])
                s.close()
            def background(sig, frame):
                print('background', flush=True)
                \(onNotice)
            signal.signal(signal.SIGUSR1, background)
            \(extra)
            notify('READY=1\\nSTATUS=serving')
            while True:
                time.sleep(0.05)
            """
        try? source.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}

/// Kernel-side truth, read directly rather than trusting icebox's own report.
enum Kernel {
    /// The app's cgroup in the hierarchy that holds it: its v2 cgroup, else its v1 freezer
    /// directory (a host without cgroup2); nil for an app with neither (the signal backend on
    /// a host without cgroups).
    static func appCgroup(_ app: AppRecord) -> String? { app.cgroup ?? app.freezerV1 }

    /// Whether the kernel holds the app frozen the way its backend freezes: its v2 cgroup
    /// (cgroup2), its v1 freezer directory (cgroup1), its main process stopped (signal).
    static func appFrozen(_ app: AppRecord) -> Bool {
        switch app.backend {
        case .cgroup2: app.cgroup.map(cgroupFrozen) ?? false
        case .cgroup1: app.freezerV1.map { freezerState($0) == "FROZEN" } ?? false
        case .signal: processState(app.pid) == "T"
        }
    }

    /// Whether the kernel holds the cgroup at `path` frozen, in either hierarchy: `frozen 1`
    /// in a v2 cgroup's cgroup.events, FROZEN in a v1 freezer's freezer.state.
    static func frozen(_ path: String) -> Bool {
        FileManager.default.fileExists(atPath: path + "/cgroup.events") ? cgroupFrozen(path) : freezerState(path) == "FROZEN"
    }

    static func cgroupFrozen(_ path: String) -> Bool {
        ((try? String(contentsOfFile: path + "/cgroup.events", encoding: .utf8)) ?? "").contains("frozen 1")
    }

    static func freezerState(_ path: String) -> String {
        ((try? String(contentsOfFile: path + "/freezer.state", encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// What each of the process's descriptors names (a path, "socket:[N]", "anon_inode:...").
    static func descriptorTargets(_ pid: pid_t) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")
        }
    }

    static func processState(_ pid: pid_t) -> Character? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        return text[text.index(close, offsetBy: 2)]
    }

    /// The processes whose parent is `parent`, with their state letter (Z: a zombie).
    static func children(of parent: pid_t, inState state: Character? = nil) -> [pid_t] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { pid_t($0) }.filter { p in
            guard let stat = try? String(contentsOfFile: "/proc/\(p)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else {
                return false
            }
            let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
            return fields.count > 1 && pid_t(fields[1]) == parent && (state == nil || fields[0].first == state)
        }
    }

    static func alive(_ pid: pid_t) -> Bool {
        guard let s = processState(pid) else { return false }
        return s != "Z" && s != "X"
    }

    /// How the scheduler treats `pid` ("self" for this process): the CPUs it may run on,
    /// its timer slack and its EEVDF slice (nil where /proc/PID/sched is not built in).
    struct Scheduling: Equatable, CustomStringConvertible {
        var cpus: String?, timerSlack: String?, slice: String?
        /// The policy's number (0 SCHED_OTHER, 1 SCHED_FIFO, 3 SCHED_BATCH, 5 SCHED_IDLE).
        var policy: String?
        var description: String {
            "CPUs \(cpus ?? "?"), timer slack \(timerSlack ?? "?") ns, slice \(slice ?? "?") ns, policy \(policy ?? "?")"
        }
    }

    /// Whether the kernel takes a custom EEVDF slice for SCHED_OTHER (sched_runtime, Linux
    /// 6.12 and later; older kernels ignore it).
    static var customSlices: Bool {
        var u = utsname()
        uname(&u)
        let release = withUnsafeBytes(of: &u.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let parts = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
        return parts.count == 2 && (parts[0], parts[1]) >= (6, 12)
    }

    static func scheduling(_ pid: String) -> Scheduling {
        func read(_ file: String) -> String { (try? String(contentsOfFile: "/proc/\(pid)/\(file)", encoding: .utf8)) ?? "" }
        // /proc/PID/sched pads its keys ("se.slice      :   1400000"), which statusField does not take.
        let sched = read("sched").split(separator: "\n")
        func field(_ key: String) -> String? {
            sched.first { $0.hasPrefix(key + " ") }.map { String($0.split(separator: ":").last ?? "").trimmingCharacters(in: .whitespaces) }
        }
        let slack = read("timerslack_ns").trimmingCharacters(in: .whitespacesAndNewlines)
        return Scheduling(
            cpus: ProcFS.statusField("Cpus_allowed_list", in: read("status")), timerSlack: slack.isEmpty ? nil : slack,
            slice: field("se.slice"), policy: field("policy"))
    }
}

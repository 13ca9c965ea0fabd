import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// A daemon whose descriptor limit its apps would outgrow (DescriptorBudget): past the budget,
/// apps share one notify socket and keep no cgroup file open between operations, and every
/// one of them still launches, notifies, freezes and thaws; after a restart too.
@Suite(
    .enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"),
    .enabled(if: FileManager.default.fileExists(atPath: "/usr/bin/prlimit"), "prlimit (util-linux) is not installed"),
    .timeLimit(.minutes(5)))
struct DescriptorShortageTests {
    /// The daemon's open descriptors: how many, and how many are kept cgroup control files.
    static func held(_ pid: pid_t) -> (all: Int, cgroupFiles: [String]) {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        let targets = fds.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)") }
        let files = ["cgroup.events", "cgroup.freeze", "cgroup.procs", "freezer.state", "memory.current", "memory.usage_in_bytes"]
        return (fds.count, targets.filter { t in files.contains { t.hasSuffix("/" + $0) } })
    }

    /// `icebox launch a0 -- sleep 1000` under a limit of 256 descriptors: the first command
    /// starts the daemon, which inherits the limit (soft and hard: it cannot raise it).
    static func launchShortOfDescriptors(_ box: Sandbox) throws -> Sandbox.Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
        p.arguments = ["--nofile=256:256", Sandbox.binary, "launch", "--grace", "0", "a0", "--", "sleep", "1000"]
        p.environment = box.environment
        return try Sandbox.runToEnd(p, timeout: 30, what: "prlimit icebox launch")
    }

    static func notifySocket(of pid: pid_t) -> String? {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/environ") else { return nil }
        for entry in data.split(separator: 0) {
            let text = String(decoding: entry, as: UTF8.self)
            if text.hasPrefix("NOTIFY_SOCKET=") { return String(text.dropFirst("NOTIFY_SOCKET=".count)) }
        }
        return nil
    }

    @Test(
        "with a limit of 256 descriptors, 30 apps: the later ones share the notify socket, and all work",
        .enabled(if: Sandbox.cgroupMissing == nil, "\(Sandbox.cgroupMissing ?? "")"))
    func pastTheBudget() throws {
        let box = Sandbox("fdshort")
        defer { box.close() }
        // 8 kept per app + 64 + clients < 128: about seven apps keep theirs.
        let first = try Self.launchShortOfDescriptors(box)
        #expect(first.status == 0, "\(first.output)")
        let daemon = try #require(box.daemonPID)
        let limits = try String(contentsOfFile: "/proc/\(daemon)/limits", encoding: .utf8)
        #expect(limits.split(separator: "\n").contains { $0.hasPrefix("Max open files") && $0.contains(" 256 ") })
        for i in 1..<28 {
            let r = try box.icebox(["launch", "--grace", "0", "a\(i)", "--", "sleep", "1000"])
            #expect(r.status == 0, "a\(i): \(r.output)")
        }
        let logged = box.events()
        #expect(logged.contains { $0.detail.contains("apps launched from now on share the notify socket") })
        // That line comes after the spawn of the app whose launch crossed the budget, which was
        // stamped before it: the log is in time order.
        for (a, b) in zip(logged, logged.dropFirst()) {
            #expect(
                a.time <= b.time && a.monotonicNanos <= b.monotonicNanos,
                "\(a.kind) \(a.app) at \(a.time) before \(b.kind) \(b.app) at \(b.time)")
        }
        let apps = try box.apps()
        let firstPID = try #require(apps["a0"]?.pid), lastPID = try #require(apps["a27"]?.pid)
        #expect(Self.notifySocket(of: firstPID) == box.runtimeDir + "/notify/a0")
        #expect(Self.notifySocket(of: lastPID) == box.runtimeDir + "/notify.sock")
        #expect(!FileManager.default.fileExists(atPath: box.runtimeDir + "/notify/a27"))

        // An app on the shared socket: its READY=1 ends the launch, its STATUS= is kept, and
        // its READY=1 in answer to the background notice cuts the grace short.
        let script = box.pythonApp(extra: "signal.signal(signal.SIGUSR2, lambda s, f: notify('STATUS=again'))")
        let py = try box.icebox(["launch", "--ready", "notify", "--ready-timeout", "20s", "py", "--", "python3", script])
        #expect(py.status == 0, "\(py.output)")
        let record = try #require(try box.apps()["py"])
        #expect(Self.notifySocket(of: record.pid) == box.runtimeDir + "/notify.sock")
        #expect(record.statusText == "serving")
        let suspended = try box.icebox(["suspend", "--grace", "60s", "py"])
        #expect(suspended.status == 0, "\(suspended.output)")
        #expect(box.events("py").contains { $0.detail.contains("READY=1") }, "the notice's answer came through the shared socket")
        let cgroup = try #require(Kernel.appCgroup(record))
        #expect(Kernel.frozen(cgroup))
        #expect(try box.icebox(["resume", "py"]).status == 0)
        #expect(!Kernel.frozen(cgroup))
        // An early app (own socket, files let go) freezes and thaws as well.
        #expect(try box.icebox(["suspend", "a1"]).status == 0)
        #expect(Kernel.frozen(try #require(try box.apps()["a1"].flatMap(Kernel.appCgroup))))
        #expect(try box.icebox(["resume", "a1"]).status == 0)

        // Between operations nothing is kept open per app but its pidfd (and the early apps'
        // own sockets).
        _ = try box.icebox(["ps"])
        let held = Self.held(daemon)
        #expect(held.cgroupFiles.isEmpty, "cgroup files kept: \(held.cgroupFiles)")
        #expect(held.all < 29 + 14 + 64, "\(held.all) descriptors held")

        // A datagram from no app's process on the shared socket is dropped and logged.
        try UnixSocket.sendDatagram(path: box.runtimeDir + "/notify.sock", "READY=1")
        let deadline = Date().addingTimeInterval(5)
        func dropLogged() -> Bool {
            box.events().contains { $0.detail.contains("on the shared notify socket") && $0.pid == getpid() }
        }
        while !dropLogged() && Date() < deadline { usleep(10_000) }
        #expect(dropLogged())

        // A new daemon (with the caller's limit, plenty) binds the shared socket again for the
        // apps that use it, and knows a shared-socket app whose record is lost by its marks.
        try box.killDaemon()
        try FileManager.default.removeItem(atPath: box.stateDir + "/registry/a27.json")
        #expect(try box.icebox(["ps"]).status == 0)
        let found = try #require(try box.apps()["a27"])
        #expect(found.pid == lastPID && found.state == .active, "\(found)")
        #expect(found.notifySocket == box.runtimeDir + "/notify.sock")
        kill(record.pid, SIGUSR2)
        let again = Date().addingTimeInterval(10)
        while (try box.apps()["py"]?.statusText) != "again" && Date() < again { usleep(20_000) }
        #expect(try box.apps()["py"]?.statusText == "again")
    }

    @Test(
        "on the shared socket, a READY=1 that comes before the stand-in's answer is held, not lost: the launch is ready",
        .enabled(if: Sandbox.cgroupMissing == nil, "\(Sandbox.cgroupMissing ?? "")"),
        .enabled(if: Sandbox.writableMounts.unified != nil, "the sender is found by its cgroup v2"),
        .enabled(
            if: Sandbox.writableMounts.memoryV1 != nil || Sandbox.writableMounts.freezerV1 != nil,
            "stand-ins are for hosts with a v1 memory or freezer hierarchy; this one has neither"),
        .enabled(if: ShellHarness.which("python3") != nil, "the early sender is a Python program"))
    func readyBeforeTheStandInAnswers() throws {
        let box = Sandbox("fdheld")
        defer { box.close() }
        try #require(try Self.launchShortOfDescriptors(box).status == 0)
        for i in 1..<12 { try #require(try box.icebox(["launch", "--grace", "0", "a\(i)", "--", "sleep", "1000"]).status == 0) }
        try #require(box.events().contains { $0.detail.contains("share the notify socket") })
        // The next launch goes through a parked stand-in: stopped, it does not answer.
        try #require(Scenario.eventually { !box.standIns().isEmpty }, "no stand-in parked")
        let standIns = box.standIns()
        for s in standIns { kill(s, SIGSTOP) }
        defer { for s in standIns { kill(s, SIGCONT) } }

        // The launch waits for its stopped stand-in; its cgroup is made already.
        let launch = Sandbox.Background(box, ["launch", "--ready", "notify", "--ready-timeout", "5s", "held", "--", "sleep", "1000"])
        let cgroup = try #require(box.cgroupRoot) + "/held"
        try #require(Scenario.eventually { FileManager.default.fileExists(atPath: cgroup + "/cgroup.procs") })
        // A process of the app (in its cgroup) says READY=1 on the shared socket before the
        // daemon knows the app, as a fast app does when the stand-in's answer comes late.
        let sender = Process()
        sender.executableURL = URL(fileURLWithPath: try #require(ShellHarness.which("python3")))
        sender.arguments = [
            "-c",
            """
            import os, socket, sys, time
            with open(sys.argv[1] + "/cgroup.procs", "w") as f: f.write(str(os.getpid()))
            socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"READY=1", sys.argv[2])
            time.sleep(60)
            """,
            cgroup, box.runtimeDir + "/notify.sock",
        ]
        try sender.run()
        defer { sender.terminate() }
        try #require(Scenario.eventually { Sandbox.pids(in: cgroup).contains(sender.processIdentifier) })
        // Time for the daemon to read the datagram while the launch still waits (without the
        // hold it is dropped now, and the launch waits out its 5 s).
        usleep(300_000)
        for s in standIns { kill(s, SIGCONT) }
        let result = try #require(launch.result(within: 20), "the launch never ended")
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("(notify)"), "\(result.output)")
        #expect(try box.apps()["held"]?.state == .active)
    }
}

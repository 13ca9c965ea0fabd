import Foundation
import Glibc
import IceboxCore
import Testing

/// The SIGSTOP backend's documented limit: an app whose processes SIGCONT each other undoes
/// the freeze. icebox must say so (the suspend fails at its deadline, naming what still
/// runs) and leave the app running and recorded active, never report it suspended while
/// one of its processes runs.
@Suite(
    .enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"),
    .enabled(
        if: CPUAffinity.cpus().count >= 2 && FileManager.default.isExecutableFile(atPath: "/usr/bin/taskset"),
        "needs two CPUs (the daemon on one, the app's two spinners on another) and taskset (util-linux)"),
    .timeLimit(.minutes(5)))
struct SignalContinueTests {
    /// Two processes that continue each other in a loop, with 50 sleepers between them in
    /// the app (so the SIGSTOP round reaches the second well after the first), the second at
    /// SCHED_FIFO so that it runs, whatever else the host runs, while the first is stopped.
    /// Both share one CPU (the last), which the daemon is kept off: the other stays free for
    /// the tests that run beside this one for its 10 s, and a stopped peer lets the other
    /// run there at once.
    static let app = """
        import os, signal, sys, time
        cpu = max(os.sched_getaffinity(0))
        r, w = os.pipe()
        first = os.fork()
        if first == 0:
            os.sched_setaffinity(0, {cpu})
            peer = int(os.read(r, 32))
            while True:
                os.kill(peer, signal.SIGCONT)
        for _ in range(50):
            if os.fork() == 0:
                while True:
                    time.sleep(1000)
        second = os.fork()
        if second == 0:
            os.sched_setaffinity(0, {cpu})
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
            except OSError:
                pass
            while True:
                os.kill(first, signal.SIGCONT)
        os.write(w, str(second).encode())
        with open(sys.argv[1], 'w') as f:
            f.write(f'{first} {second}')
        while True:
            time.sleep(1000)
        """

    @Test(
        "--backend signal: processes that SIGCONT each other make the suspend fail at its deadline (the app runs, recorded active), or, caught both at once, frozen for real",
        .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"))
    func mutualContinue() throws {
        let box = Sandbox()
        defer { box.close() }
        let script = box.dir + "/continue.py", pids = box.dir + "/pids"
        try Self.app.write(toFile: script, atomically: true, encoding: .utf8)
        let launched = try box.icebox(["launch", "--backend", "signal", "pair", "--", "python3", script, pids])
        #expect(launched.status == 0, "\(launched.output)")
        // The app writes both pids once both spinners run; the file exists a moment before
        // its text is in it (a loaded host made that moment long enough to read it empty).
        var pair: [pid_t] = []
        let deadline = Date().addingTimeInterval(30)
        while pair.count < 2 && Date() < deadline {
            usleep(20_000)
            pair = ((try? String(contentsOfFile: pids, encoding: .utf8)) ?? "").split(separator: " ").compactMap { pid_t($0) }
        }
        try #require(pair.count == 2, "the app did not say its spinners' pids within 30 s")
        // The spinners' CPU (the last: see the app), kept free of the daemon.
        let daemon = try #require(box.daemonPID)
        try CPUAffinity.keep(daemon, off: try #require(CPUAffinity.cpus(of: "\(pair[1])").last))

        let started = Date()
        let r = try box.icebox(["suspend", "--grace", "0", "pair"], timeout: 40)
        let took = Date().timeIntervalSince(started)
        let app = try #require(try box.apps()["pair"])
        let members = Sandbox.pids(in: try #require(Kernel.appCgroup(app)))
        #expect(members.count == 53)
        if r.status == 0 {
            // The other outcome the kernel allows: the SIGSTOP round caught both spinners
            // before either continued the other (a loaded host can keep the one continued
            // off its CPU that long). Then the app is frozen, and icebox must say only that:
            // every process stopped as the kernel tells it, recorded suspended, and a resume
            // runs them all again. (A confirmation with one running was a bug:
            // SignalFreezeConfirmationTests.)
            #expect(app.state == .suspended, "recorded \(app.state)")
            #expect(members.allSatisfy { Kernel.processState($0) == "T" }, "suspended, yet a process runs")
            #expect(try box.icebox(["resume", "pair"]).status == 0)
            #expect(members.allSatisfy { Kernel.processState($0) != "T" }, "every process of the app runs again")
            return
        }
        #expect(r.status == 1, "\(r.output)")
        #expect(r.stderr.contains("pair"), "\(r.stderr)")
        #expect(took >= 9.5, "the suspend fails at its deadline (10 s), not before: \(took) s")
        #expect(app.state == .active, "recorded \(app.state), not active")
        // The kernel agrees: the two still run (neither stopped), and the rest was continued.
        for pid in pair { #expect(Kernel.processState(pid) != "T", "pid \(pid) is stopped") }
        #expect(members.allSatisfy { Kernel.processState($0) != "T" }, "every process of the app runs again")
        #expect(box.events("pair").contains { $0.kind == .error || $0.detail.contains("freeze") }, "\(box.events("pair"))")
    }
}

/// Which CPUs a process may run on, read and set through the kernel's own tools.
enum CPUAffinity {
    /// The CPUs `pid` may run on, from the kernel (Cpus_allowed_list: "0-1,4").
    static func cpus(of pid: String = "self") -> [Int] {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") })
        else { return [] }
        return line.dropFirst("Cpus_allowed_list:".count).split(separator: ",").flatMap { range -> [Int] in
            let ends = range.split(separator: "-").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard let low = ends.first, let high = ends.last, low <= high else { return [] }
            return Array(low...high)
        }
    }

    /// Keeps every thread of `pid` off `cpu` (taskset -a). The premise of the test is that
    /// a stopped spinner lets the other one run at once on their CPU; a daemon running there
    /// (a loaded host moves it anywhere) could stop both before either ran, and the suspend
    /// then succeeded: a flake that said nothing about icebox (seen in CI).
    static func keep(_ pid: pid_t, off cpu: Int) throws {
        let others = cpus(of: "\(pid)").filter { $0 != cpu }
        try #require(!others.isEmpty, "the daemon may run only on CPU \(cpu)")
        let taskset = Process()
        taskset.executableURL = URL(fileURLWithPath: "/usr/bin/taskset")
        taskset.arguments = ["-a", "-p", "-c", others.map(String.init).joined(separator: ","), "\(pid)"]
        taskset.standardOutput = FileHandle.nullDevice
        try taskset.run()
        taskset.waitUntilExit()
        try #require(taskset.terminationStatus == 0, "taskset failed")
    }
}

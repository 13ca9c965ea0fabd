import Foundation
import Glibc
import IceboxCore
import Testing

/// The SIGSTOP backend's documented limit: an app whose processes SIGCONT each other undoes
/// the freeze. icebox must say so (the suspend fails at its deadline, naming what still
/// runs) and leave the app running and recorded active, never report it suspended.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct SignalContinueTests {
    /// Two processes that continue each other in a loop, with 50 sleepers between them in
    /// the app (so the SIGSTOP round reaches the second well after the first), the second at
    /// SCHED_FIFO so that it runs, whatever else the host runs, while the first is stopped.
    /// Both share one CPU (the last): the other stays free for the tests that run beside
    /// this one for its 10 s, and a stopped peer lets the other run there at once.
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

    @Test("--backend signal: processes that SIGCONT each other make the suspend fail at its deadline; the app runs, recorded active")
    func mutualContinue() throws {
        let box = Sandbox()
        defer { box.close() }
        let script = box.dir + "/continue.py", pids = box.dir + "/pids"
        try Self.app.write(toFile: script, atomically: true, encoding: .utf8)
        let launched = try box.icebox(["launch", "--backend", "signal", "pair", "--", "python3", script, pids])
        #expect(launched.status == 0, "\(launched.output)")
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: pids) && Date() < deadline { usleep(20_000) }
        let pair = try String(contentsOfFile: pids, encoding: .utf8).split(separator: " ").compactMap { pid_t($0) }
        try #require(pair.count == 2)

        let started = Date()
        let r = try box.icebox(["suspend", "--grace", "0", "pair"], timeout: 40)
        let took = Date().timeIntervalSince(started)
        #expect(r.status == 1, "\(r.output)")
        #expect(r.stderr.contains("pair"), "\(r.stderr)")
        #expect(took >= 9.5, "the suspend fails at its deadline (10 s), not before: \(took) s")
        let app = try #require(try box.apps()["pair"])
        #expect(app.state == .active, "recorded \(app.state), not active")
        // The kernel agrees: the two still run (neither stopped), and the rest was continued.
        for pid in pair { #expect(Kernel.processState(pid) != "T", "pid \(pid) is stopped") }
        let members = Sandbox.pids(in: try #require(app.cgroup))
        #expect(members.count == 53)
        #expect(members.allSatisfy { Kernel.processState($0) != "T" }, "every process of the app runs again")
        #expect(box.events("pair").contains { $0.kind == .error || $0.detail.contains("freeze") }, "\(box.events("pair"))")
    }
}

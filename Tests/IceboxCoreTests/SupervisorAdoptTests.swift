import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// adopt and release through the library (Supervisor → IceboxClient), on a process this test
/// starts itself, checked from the kernel.
@Suite(
    .serialized, .enabled(if: SupervisorHost.unavailableReason == nil, "\(SupervisorHost.unavailableReason ?? "")"),
    .timeLimit(.minutes(5)))
struct SupervisorAdoptTests {
    static func cgroup(of pid: pid_t, _ facts: HostFacts) -> String? {
        facts.mounts.unifiedMount.flatMap { CgroupMembership.path(of: pid, mount: $0) }
    }

    /// Kills a process this test started and waits for Foundation to see it end, for 10 s at
    /// most: a wait that never returned turned a failure of this test into its time limit
    /// (CI, under load), with nothing said about what had failed. The process's state is
    /// told instead (T: still frozen or stopped; Z: ended, not reaped).
    static func end(_ p: Process) {
        let pid = p.processIdentifier
        kill(pid, SIGKILL)
        let ended = DispatchSemaphore(value: 0)
        Thread {
            p.waitUntilExit()
            ended.signal()
        }.start()
        if ended.wait(timeout: .now() + 10) == .timedOut {
            let state = Kernel.processState(pid).map { String($0) } ?? "gone"
            let cgroup = (try? String(contentsOfFile: "/proc/\(pid)/cgroup", encoding: .utf8)) ?? ""
            Issue.record("pid \(pid) was not seen to end 10 s after SIGKILL (state \(state); \(cgroup))")
        }
    }

    @Test("adopt returns a typed AdoptedApp, suspend freezes it, release hands it back running")
    func adoptAndRelease() throws {
        let supervisor = try Supervisor.start()
        defer { try? supervisor.stop() }
        try #require(supervisor.cgroupRoot != nil, "\(supervisor.cgroupProblem ?? "")")
        // Started outside the supervisor; its signal mask cleared (the test runner's is inherited).
        // python3 itself, not a launcher such as pyenv's shim, which forks helpers first.
        let which = Process()
        which.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        which.arguments = ["python3", "-c", "import sys; print(sys.executable)"]
        let out = Pipe()
        which.standardOutput = out
        try which.run()
        let python = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        which.waitUntilExit()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: python)
        p.arguments = ["-c", "import signal, time; signal.pthread_sigmask(signal.SIG_SETMASK, []); time.sleep(1000)"]
        try p.run()
        defer { Self.end(p) }
        let pid = p.processIdentifier
        let origin = Self.cgroup(of: pid, supervisor.hostFacts)

        #expect(throws: IceboxError.self) { try supervisor.adopt(AdoptOptions(name: "init", source: .pid(1))) }
        do {
            _ = try supervisor.adopt(AdoptOptions(name: "init", source: .pid(1)))
        } catch {
            #expect(error.code == .usage && error.description.contains("pid 1"), "\(error)")
        }

        var options = AdoptOptions(name: "nap", source: .pid(pid))
        options.priority = .low
        let app = try supervisor.adopt(options)
        #expect(app.pid == pid && app.record.isAdopted && app.record.options.priority == .low)
        #expect(app.origin == origin ?? "")
        #expect(app.moveDuration > .zero)
        let cgroup = try #require(app.cgroup)
        #expect(Kernel.cgroupProcs(cgroup) == [pid])
        #expect(Self.cgroup(of: pid, supervisor.hostFacts) == cgroup)

        _ = try supervisor.suspend("nap", grace: .zero)
        #expect(Kernel.cgroupEvents(cgroup)["frozen"] == "1")

        let released = try supervisor.release("nap")
        #expect(released.pid == pid && released.output.lines.first?.contains("released") == true, "\(released.output)")
        #expect(Self.cgroup(of: pid, supervisor.hostFacts) == origin)
        #expect(!FileIO.exists(cgroup))
        #expect(try supervisor.state(of: "nap") == nil)
        #expect(Kernel.processState(pid).map { $0 != "Z" && $0 != "X" } == true)
    }
}

import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

extension KernelScenarios {
    /// The scenarios of the kernel's freezer selftest (tools/testing/selftests/cgroup/
    /// test_freezer.c), each played on an app icebox launched and suspended, on every backend
    /// where the scenario means something, with the verdict read from the kernel
    /// (cgroup.events, freezer.state, /proc/PID/stat, cgroup.stat.local). Where the SIGSTOP
    /// backend cannot honour a scenario, the man page (BACKENDS, signal) says which and why.
    @Suite(
        .enabled(if: ScenarioProgram.unavailableReason == nil, "\(ScenarioProgram.unavailableReason ?? "")"),
        .timeLimit(.minutes(5)))
    struct KernelFreezerTests {
        /// Every backend but the v1 freezer, whose cases are `OnCgroup1`'s (a condition of their own).
        static let everyBackend: [BackendKind] = [.cgroup2, .signal]
        /// Scenarios about cgroups themselves (sub-cgroups, migration): not for SIGSTOP.
        static let cgroupBackends: [BackendKind] = [.cgroup2]

        @Test("test_cgfreezer_simple: 100 processes are frozen and thawed whole", arguments: everyBackend)
        func simple(backend: BackendKind) throws {
            let box = Sandbox("ksimple\(backend)")
            defer { box.close() }
            let app = try ScenarioApp(box, "simple", backend: backend, ["spawn", "100"], processes: 101)
            #expect(app.kernelThawed)
            let s = try app.suspend()
            // The count is the kernel's (threads for SIGSTOP: one each here).
            #expect(s.stdout.contains("(\(backend.rawValue), 101 \(backend == .signal ? "threads" : "processes"))"), "\(s.stdout)")
            #expect(app.kernelFrozen)
            #expect(app.state == .suspended)
            try app.resume()
            #expect(app.kernelThawed)
            #expect(app.state == .active)
            #expect(app.members.count == 101)
        }

        @Test(
            "test_cgfreezer_tree: sub-cgroups frozen on their own stay frozen under a resume; the count includes them",
            arguments: cgroupBackends)
        func tree(backend: BackendKind) throws {
            let box = Sandbox("ktree\(backend)")
            defer { box.close() }
            let app = try ScenarioApp(box, "tree", backend: backend, ["spawn", "5"], processes: 6)
            let a = try #require(app.freezerDir)
            // A/{B/{C,D}, E/F/G/H, I, K}, one process in C, one in H, three in K.
            for sub in ["B", "B/C", "B/D", "E", "E/F", "E/F/G", "E/F/G/H", "I", "K"] { try Scenario.makeCgroup(a + "/" + sub) }
            let children = app.members.filter { $0 != app.pid }
            try #require(children.count == 5)
            for (pid, sub) in zip(children, ["B/C", "E/F/G/H", "K", "K", "K"]) { try Scenario.move(pid, to: a + "/" + sub) }
            for sub in ["B", "E/F", "E/F/G"] {
                try Scenario.setFrozen(a + "/" + sub, backend, true)
                #expect(Scenario.waitFrozen(a + "/" + sub, backend, true), "\(sub) did not freeze")
            }
            #expect(!Scenario.frozen(a, backend) && !Scenario.frozen(a + "/E", backend))

            // icebox freezes A: A, B and E read frozen, and every process of the tree is counted.
            let s = try app.suspend()
            #expect(s.stdout.contains("(\(backend.rawValue), 6 processes)"), "\(s.stdout)")
            for dir in ["", "/B", "/E"] { #expect(Scenario.frozen(a + dir, backend), "A\(dir) is not frozen") }
            for sub in ["B", "E/F", "E/F/G"] { try Scenario.setFrozen(a + "/" + sub, backend, false) }
            // Still under a frozen A.
            for sub in ["B/C", "E/F/G/H"] { #expect(Scenario.waitFrozen(a + "/" + sub, backend, true), "\(sub) thawed under a frozen A") }
            #expect(app.state == .suspended)

            // icebox thaws A: nothing is frozen any more.
            try app.resume()
            for dir in ["", "/B/C", "/E/F/G/H", "/K"] { #expect(Scenario.waitFrozen(a + dir, backend, false), "A\(dir) is still frozen") }
            #expect(app.state == .active)
        }

        @Test("test_cgfreezer_forkbomb: a fork bomb is frozen mid-flight, stays frozen, and is evicted whole", arguments: everyBackend)
        func forkbomb(backend: BackendKind) throws {
            let box = Sandbox("kbomb\(backend)")
            defer { box.close() }
            // Bounded: 300 forks in all, counted in shared memory by the bomb itself.
            let app = try ScenarioApp(box, "bomb", backend: backend, ["forkbomb", "300"], processes: nil)
            try app.suspend()
            #expect(app.kernelFrozen)
            let frozen = Set(app.members)
            // Frozen means no forks: the same processes a while later.
            usleep(50_000)
            #expect(Set(app.members) == frozen, "the bomb went on forking while frozen")
            #expect(app.kernelFrozen)
            let handles = Scenario.handles(Array(frozen))
            try app.evict()
            #expect(Scenario.allEnded(handles), "a process of the bomb survived its eviction")
            #expect(!FileManager.default.fileExists(atPath: app.cgroup))
        }

        @Test("test_cgfreezer_mkdir: a sub-cgroup made in a suspended app, and a process put in it, are frozen", arguments: cgroupBackends)
        func mkdir(backend: BackendKind) throws {
            let box = Sandbox("kmkdir\(backend)")
            defer { box.close() }
            let app = try ScenarioApp(box, "mk", backend: backend, ["idle"])
            let a = try #require(app.freezerDir)
            try app.suspend()
            try Scenario.makeCgroup(a + "/B")
            let newcomer = try Newcomer()
            defer { newcomer.end() }
            try Scenario.move(newcomer.pid, to: a + "/B")
            #expect(Scenario.waitFrozen(a + "/B", backend, true), "the new sub-cgroup is not frozen")
            #expect(Scenario.frozen(a, backend), "the app's cgroup thawed")
            #expect(app.state == .suspended)
            try app.resume()
            #expect(Scenario.waitFrozen(a + "/B", backend, false))
            #expect(app.kernelThawed)
        }

        @Test(
            "test_cgfreezer_rmdir: removing a sub-cgroup of a suspended app leaves it frozen; a new one is born frozen",
            arguments: cgroupBackends)
        func rmdir(backend: BackendKind) throws {
            let box = Sandbox("krmdir\(backend)")
            defer { box.close() }
            let app = try ScenarioApp(box, "rm", backend: backend, ["idle"])
            let a = try #require(app.freezerDir)
            try Scenario.makeCgroup(a + "/B")
            try app.suspend()
            #expect(Glibc.rmdir(a + "/B") == 0, "rmdir: \(String(cString: strerror(errno)))")
            #expect(Scenario.frozen(a, backend))
            #expect(app.state == .suspended)
            try Scenario.makeCgroup(a + "/B")
            #expect(Scenario.waitFrozen(a + "/B", backend, true), "a sub-cgroup made under a frozen app is not frozen")
            try app.resume()
            #expect(Scenario.waitFrozen(a, backend, false) && Scenario.waitFrozen(a + "/B", backend, false))
        }

        @Test(
            "test_cgfreezer_migrate: a process moved between a running and a suspended app takes the state of where it lands",
            arguments: cgroupBackends)
        func migrate(backend: BackendKind) throws {
            let box = Sandbox("kmigrate\(backend)")
            defer { box.close() }
            let a = try ScenarioApp(box, "a", backend: backend, ["spawn", "1"], processes: 2)
            let b = try ScenarioApp(box, "b", backend: backend, ["idle"])
            let dirA = try #require(a.freezerDir), dirB = try #require(b.freezerDir)
            let mover = try #require(a.members.first { $0 != a.pid })

            // 1) A (running) → B (suspended): frozen there; A still runs.
            try b.suspend()
            try Scenario.move(mover, to: dirB)
            #expect(Scenario.waitFrozen(dirB, backend, true))
            #expect(!Scenario.frozen(dirA, backend))
            // 2) B (suspended) → A (running): it runs; B stays frozen.
            try Scenario.move(mover, to: dirA)
            #expect(Scenario.waitFrozen(dirA, backend, false))
            #expect(Scenario.frozen(dirB, backend))
            // 3) A (suspended) → B (suspended): both frozen.
            try a.suspend()
            try Scenario.move(mover, to: dirB)
            #expect(Scenario.waitFrozen(dirB, backend, true) && Scenario.frozen(dirA, backend))
            #expect(a.state == .suspended && b.state == .suspended)
        }

        @Test("test_cgfreezer_ptrace: a tracer may seize and interrupt a suspended app; it stays frozen", arguments: everyBackend)
        func ptrace(backend: BackendKind) throws {
            let box = Sandbox("kptrace\(backend)")
            defer { box.close() }
            let app = try ScenarioApp(box, "traced", backend: backend, ["idle"])
            try app.suspend()
            let tracer = try Tracer(app.pid)
            defer { tracer.end() }
            if backend == .cgroup1 {
                // The v1 freezer holds its tasks in the refrigerator, where no ptrace trap is
                // taken: the interrupt lands only once icebox thaws the app.
                #expect(!tracer.waitFor("interrupted", seconds: 0.3), "a v1-frozen task trapped: \(tracer.output)")
                #expect(app.kernelFrozen, "the tracer thawed the app")
                try app.resume()
                #expect(tracer.waitFor("interrupted"), "no trap after the thaw: \(tracer.output)")
                #expect(tracer.detach(), "GETSIGINFO/DETACH: \(tracer.output)")
                return
            }
            #expect(tracer.waitFor("interrupted"), "PTRACE_INTERRUPT of a frozen task: \(tracer.output)")
            #expect(app.kernelFrozen, "the tracer thawed the app")
            #expect(tracer.detach(), "GETSIGINFO/DETACH: \(tracer.output)")
            // A task detached during a group stop is woken to re-enter it: under SIGSTOP it runs
            // for a moment, then reads stopped again. Under cgroup2 it re-enters the freezer the
            // same way, and cgroup.events may read "frozen 0" in between (seen once here, under
            // load): frozen again at once, and still frozen a while later, is "not thawed".
            #expect(Scenario.eventually(seconds: 2) { app.kernelFrozen }, "detaching thawed the app")
            usleep(200_000)
            #expect(app.kernelFrozen, "detaching thawed the app")
            #expect(app.state == .suspended)
            try app.resume()
            #expect(Scenario.eventually { app.kernelThawed }, "the app does not run after the resume")
        }

        @Test("test_cgfreezer_stopped: a process stopped before the suspend is still stopped after the resume", arguments: everyBackend)
        func stopped(backend: BackendKind) throws {
            let box = Sandbox("kstopped\(backend)")
            defer { box.close() }
            let app = try ScenarioApp(box, "stopped", backend: backend, ["idle"])
            kill(app.pid, SIGSTOP)
            #expect(Scenario.eventually { Kernel.processState(app.pid) == "T" })
            if let dir = app.freezerDir { #expect(!Scenario.frozen(dir, backend)) }
            try app.suspend()
            #expect(app.kernelFrozen)
            try app.resume()
            if let dir = app.freezerDir { #expect(Scenario.waitFrozen(dir, backend, false)) }
            #expect(Kernel.processState(app.pid) == "T", "the resume continued a process someone else had stopped")
            #expect(app.state == .active)
            kill(app.pid, SIGCONT)
        }

        @Test("test_cgfreezer_ptraced: an app held in a ptrace trap is suspended and resumed; the tracer keeps it", arguments: everyBackend)
        func ptraced(backend: BackendKind) throws {
            let box = Sandbox("kptraced\(backend)")
            defer { box.close() }
            let app = try ScenarioApp(box, "traced", backend: backend, ["idle"])
            let tracer = try Tracer(app.pid)
            defer { tracer.end() }
            try #require(tracer.waitFor("interrupted"), "\(tracer.output)")
            #expect(Kernel.processState(app.pid) == "t")
            try app.suspend()
            #expect(app.kernelFrozen)
            try app.resume()
            if let dir = app.freezerDir { #expect(Scenario.waitFrozen(dir, backend, false)) }
            // Still in the tracer's trap: GETSIGINFO works only on a tracee that is stopped.
            #expect(tracer.detach(), "GETSIGINFO/DETACH after the resume: \(tracer.output)")
            #expect(app.state == .active)
            // Detached, it runs: no stop of the suspend's was left waiting for the tracer to go.
            #expect(Scenario.runs(app.pid), "state \(String(describing: Kernel.processState(app.pid))) after the tracer detached")
        }

        @Test("test_cgfreezer_vfork: a parent waiting in vfork() is frozen with its child", arguments: cgroupBackends)
        func vfork(backend: BackendKind) throws {
            let box = Sandbox("kvfork\(backend)")
            defer { box.close() }
            let app = try ScenarioApp(box, "vfork", backend: backend, ["vfork"], processes: 2)
            try app.suspend()
            #expect(app.kernelFrozen)
            #expect(app.state == .suspended)
            try app.resume()
            #expect(app.kernelThawed)
        }

        /// SIGSTOP cannot move a parent waiting in vfork() to T: it stays in the kernel until
        /// its child execs or exits. With the child stopped, it never returns to its program,
        /// and the SIGSTOP it holds pending stops it first if it does: it is held, as the
        /// cgroup freezers count it (above). This suspend used to time out and roll back; dash
        /// and glibc's posix_spawn put apps in that state many times a second.
        @Test("test_cgfreezer_vfork on SIGSTOP: a vfork() parent held in the kernel with its SIGSTOP pending counts as stopped")
        func vforkSignal() throws {
            let box = Sandbox("kvforksig")
            defer { box.close() }
            let app = try ScenarioApp(box, "vfork", backend: .signal, ["vfork"], processes: 2)
            let r = try box.icebox(["suspend", "vfork"])
            #expect(r.status == 0, "\(r.output)")
            #expect(app.state == .suspended)
            let children = app.members.filter { $0 != app.pid }
            try #require(children.count == 1)
            // From the kernel: the child stopped, the parent in the kernel with the stop pending.
            #expect(Kernel.processState(children[0]) == "T")
            #expect(Kernel.processState(app.pid) == "D")
            #expect(ProcFS.stopPending(pid: app.pid, tid: app.pid), "the parent holds no SIGSTOP")
            #expect(try box.icebox(["resume", "vfork"]).status == 0)
            #expect(app.state == .active)
            // SIGCONT took the pending stop away: nothing left stopped, none to stop later.
            #expect(app.members.allSatisfy { !Scenario.stopped($0) }, "the resume left a process stopped")
            #expect(!ProcFS.stopPending(pid: app.pid, tid: app.pid), "the parent still holds a SIGSTOP")
        }

        // MARK: The frozen-time cases (cgroup.stat.local frozen_usec, cgroup v2 only)

        @Test("test_cgfreezer_time_populate: processes joining a suspended app neither reset nor stop its frozen time")
        func timePopulate() throws {
            let box = Sandbox("ktimepop")
            defer { box.close() }
            let app = try ScenarioApp(box, "pop", backend: .cgroup2, ["spawn", "9"], processes: 10)
            try #require(Scenario.frozenMicros(app.cgroup) != nil, "this kernel keeps no frozen time (Linux 6.17)")
            #expect(Scenario.frozenMicros(app.cgroup) == 0, "10 running processes, no frozen time")
            try app.suspend()
            let first = try #require(Scenario.frozenMicros(app.cgroup))
            let newcomers = try (0..<3).map { _ in try Newcomer() }
            defer { for n in newcomers { n.end() } }
            for n in newcomers { try Scenario.move(n.pid, to: app.cgroup) }
            #expect(Scenario.waitFrozen(app.cgroup, .cgroup2, true))
            let populated = try #require(Scenario.frozenMicros(app.cgroup))
            #expect(populated > first)
            try app.resume()
            let total = try #require(Scenario.frozenMicros(app.cgroup))
            #expect(total > populated)
            usleep(2_000)
            #expect(Scenario.frozenMicros(app.cgroup) == total, "the frozen time grew after the resume")
        }

        @Test("test_cgfreezer_time_simple: the app's frozen time grows while suspended and only then")
        func timeSimple() throws {
            let box = Sandbox("ktime")
            defer { box.close() }
            let app = try ScenarioApp(box, "clock", backend: .cgroup2, ["idle"])
            try #require(Scenario.frozenMicros(app.cgroup) != nil, "this kernel keeps no frozen time (Linux 6.17)")
            #expect(Scenario.frozenMicros(app.cgroup) == 0)
            let before = Clock.monotonicNanos()
            try app.suspend()
            let frozenAt = Clock.monotonicNanos()
            usleep(20_000)
            let during = try #require(Scenario.frozenMicros(app.cgroup))
            #expect(during >= 20_000, "frozen \(during) µs after 20 ms suspended")
            let resuming = Clock.monotonicNanos()
            try app.resume()
            let after = Clock.monotonicNanos()
            let total = try #require(Scenario.frozenMicros(app.cgroup))
            // icebox froze within the suspend command and thawed within the resume command.
            #expect(total > during)
            #expect(UInt64(total) * 1000 <= after - before, "frozen \(total) µs, longer than suspend → resume")
            #expect(UInt64(total) * 1000 >= resuming - frozenAt, "frozen \(total) µs, shorter than suspended → resume")
            usleep(5_000)
            #expect(Scenario.frozenMicros(app.cgroup) == total, "the frozen time grew after the resume")
        }

        @Test("test_cgfreezer_time_migrate: a process leaving a suspended app does not take its frozen time along")
        func timeMigrate() throws {
            let box = Sandbox("ktimemig")
            defer { box.close() }
            let a = try ScenarioApp(box, "a", backend: .cgroup2, ["spawn", "1"], processes: 2)
            let b = try ScenarioApp(box, "b", backend: .cgroup2, ["idle"])
            try #require(Scenario.frozenMicros(a.cgroup) != nil, "this kernel keeps no frozen time (Linux 6.17)")
            try a.suspend()
            let first = try #require(Scenario.frozenMicros(a.cgroup))
            try Scenario.move(try #require(a.members.first { $0 != a.pid }), to: b.cgroup)
            usleep(1_000)
            #expect(Scenario.frozenMicros(b.cgroup) == 0)
            #expect(try #require(Scenario.frozenMicros(a.cgroup)) > first)
            #expect(a.state == .suspended && b.state == .active)
        }

        @Test("test_cgfreezer_time_parent: a sub-cgroup made in a suspended app is frozen for less time than the app")
        func timeParent() throws {
            let box = Sandbox("ktimepar")
            defer { box.close() }
            let app = try ScenarioApp(box, "p", backend: .cgroup2, ["idle"])
            try #require(Scenario.frozenMicros(app.cgroup) != nil, "this kernel keeps no frozen time (Linux 6.17)")
            try app.suspend()
            usleep(1_000)
            try Scenario.makeCgroup(app.cgroup + "/B")
            #expect(Scenario.frozen(app.cgroup + "/B", .cgroup2))
            let parent = try #require(Scenario.frozenMicros(app.cgroup))
            let child = try #require(Scenario.frozenMicros(app.cgroup + "/B"))
            #expect(parent > child)
            // The child frozen on its own, the app resumed: the child's time overtakes the app's.
            try Scenario.setFrozen(app.cgroup + "/B", .cgroup2, true)
            try app.resume()
            #expect(Scenario.frozen(app.cgroup + "/B", .cgroup2))
            usleep(100_000)
            #expect(try #require(Scenario.frozenMicros(app.cgroup + "/B")) > (try #require(Scenario.frozenMicros(app.cgroup))))
        }

        @Test("test_cgfreezer_time_child and _nested: sub-cgroups frozen before the app count more frozen time than it")
        func timeNested() throws {
            let box = Sandbox("ktimenest")
            defer { box.close() }
            let app = try ScenarioApp(box, "n", backend: .cgroup2, ["idle"])
            try #require(Scenario.frozenMicros(app.cgroup) != nil, "this kernel keeps no frozen time (Linux 6.17)")
            let b = app.cgroup + "/B", c = b + "/C"
            try Scenario.makeCgroup(b)
            try Scenario.makeCgroup(c)
            // _child: a frozen sub-cgroup counts time; the running app does not.
            try Scenario.setFrozen(c, .cgroup2, true)
            #expect(Scenario.waitFrozen(c, .cgroup2, true))
            #expect(Scenario.frozenMicros(app.cgroup) == 0 && (Scenario.frozenMicros(c) ?? 0) > 0)
            // _nested: C, then B, then the app (by icebox); thawed in the reverse order.
            try Scenario.setFrozen(b, .cgroup2, true)
            try app.suspend()
            usleep(1_000)
            try app.resume()
            try Scenario.setFrozen(b, .cgroup2, false)
            try Scenario.setFrozen(c, .cgroup2, false)
            let times = [c, b, app.cgroup].compactMap(Scenario.frozenMicros)
            #expect(times.count == 3 && times[0] > times[1] && times[1] > times[2], "C, B, app: \(times)")
        }
    }
}

/// A process from outside the app, for a test to move into the app's cgroups (an idle
/// ScenarioProgram, the test's own child). Killed and reaped by `end()`.
final class Newcomer {
    let process = Process()
    var pid: pid_t { process.processIdentifier }

    init() throws {
        process.executableURL = URL(fileURLWithPath: ScenarioProgram.path)
        process.arguments = ["idle"]
        try process.run()
    }

    func end() {
        kill(pid, SIGKILL)
        process.waitUntilExit()
    }
}

/// A ScenarioProgram in `trace PID` mode: it seizes and interrupts the process, then detaches
/// when told. Its lines are read with a deadline; `end()` kills it (a tracer that exits
/// detaches), so a failing test leaves no traced process.
final class Tracer {
    let process = Process()
    private let input = Pipe(), out = Pipe()
    private(set) var output = ""

    init(_ pid: pid_t) throws {
        process.executableURL = URL(fileURLWithPath: ScenarioProgram.path)
        process.arguments = ["trace", String(pid)]
        process.standardInput = input
        process.standardOutput = out
        try process.run()
    }

    /// Waits (`seconds` at most) for a line equal to `line`; false on time-out, EOF or an error line.
    func waitFor(_ line: String, seconds: Double = 10) -> Bool {
        let fd = out.fileHandleForReading.fileDescriptor
        let deadline = Clock.monotonicNanos() + UInt64(seconds * 1e9)
        while !output.split(separator: "\n").contains(Substring(line)) {
            if output.contains("error") { return false }
            let now = Clock.monotonicNanos()
            guard now < deadline, (try? Poll.wait(fd, events: Int16(POLLIN), timeoutNanos: deadline - now)) ?? 0 != 0 else { return false }
            var chunk = [UInt8](repeating: 0, count: 256)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { return false }
            output += String(decoding: chunk[0..<n], as: UTF8.self)
        }
        return true
    }

    /// Asks for PTRACE_GETSIGINFO and PTRACE_DETACH; true once both succeeded.
    func detach() -> Bool {
        input.fileHandleForWriting.write(Data("detach\n".utf8))
        return waitFor("detached")
    }

    func end() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

extension KernelScenarios.KernelFreezerTests {
    /// The cases on the v1 freezer: a host without a v1 freezer hierarchy (pure cgroup v2)
    /// skips them, saying why, instead of failing their launch.
    @Suite(.enabled(if: Sandbox.writableMounts.freezerV1 != nil, "\(LifecycleTests.freezerV1Reason)"))
    struct OnCgroup1 {
        @Test("test_cgfreezer_simple, on the v1 freezer") func simple() throws {
            try KernelScenarios.KernelFreezerTests().simple(backend: .cgroup1)
        }
        @Test("test_cgfreezer_tree, on the v1 freezer") func tree() throws {
            try KernelScenarios.KernelFreezerTests().tree(backend: .cgroup1)
        }
        @Test("test_cgfreezer_forkbomb, on the v1 freezer") func forkbomb() throws {
            try KernelScenarios.KernelFreezerTests().forkbomb(backend: .cgroup1)
        }
        @Test("test_cgfreezer_mkdir, on the v1 freezer") func mkdir() throws {
            try KernelScenarios.KernelFreezerTests().mkdir(backend: .cgroup1)
        }
        @Test("test_cgfreezer_rmdir, on the v1 freezer") func rmdir() throws {
            try KernelScenarios.KernelFreezerTests().rmdir(backend: .cgroup1)
        }
        @Test("test_cgfreezer_migrate, on the v1 freezer") func migrate() throws {
            try KernelScenarios.KernelFreezerTests().migrate(backend: .cgroup1)
        }
        @Test("test_cgfreezer_ptrace, on the v1 freezer") func ptrace() throws {
            try KernelScenarios.KernelFreezerTests().ptrace(backend: .cgroup1)
        }
        @Test("test_cgfreezer_stopped, on the v1 freezer") func stopped() throws {
            try KernelScenarios.KernelFreezerTests().stopped(backend: .cgroup1)
        }
        @Test("test_cgfreezer_ptraced, on the v1 freezer") func ptraced() throws {
            try KernelScenarios.KernelFreezerTests().ptraced(backend: .cgroup1)
        }
        @Test("test_cgfreezer_vfork, on the v1 freezer") func vfork() throws {
            try KernelScenarios.KernelFreezerTests().vfork(backend: .cgroup1)
        }
    }
}

import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// strace, which sees a process's system calls from outside it.
enum Strace {
    static let path: String? = ["/usr/bin/strace", "/bin/strace"].first { access($0, X_OK) == 0 }

    /// The lines strace writes for the calls of `syscalls` that `daemon` makes while `body`
    /// runs, in order; `options` go to strace too (-y: descriptors with their paths).
    static func trace(_ syscalls: [String], options: [String] = [], of daemon: pid_t, during body: () throws -> Void) throws -> [String] {
        let out = Sandbox.temporaryDirectory("strace") + "/trace"
        let tracer = Process()
        tracer.executableURL = URL(fileURLWithPath: try #require(Strace.path))
        tracer.arguments = ["-qq", "-p", "\(daemon)", "-e", "trace=\(syscalls.joined(separator: ","))", "-o", out] + options
        tracer.standardError = FileHandle.nullDevice
        try tracer.run()
        // SIGKILL ends it: the kernel detaches the daemon, which runs on, and each line is in
        // the file already (strace writes them whole). SIGINT and SIGTERM did not: a child of
        // the test runner had them blocked, and the first try sat out a SIGINT for good.
        var ended = false
        func end() {
            kill(tracer.processIdentifier, SIGKILL)
            tracer.waitUntilExit()
            ended = true
        }
        defer { if !ended { end() } }
        try #require(
            Scenario.eventually {
                (SpeedMechanismSwitchTests.status(daemon, "TracerPid").flatMap { pid_t($0) } ?? 0) == tracer.processIdentifier
            },
            "strace did not attach to the daemon")
        try body()
        end()
        #expect(Scenario.eventually { SpeedMechanismSwitchTests.status(daemon, "TracerPid") == "0" }, "the daemon is still traced")
        let trace = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        return trace.split(separator: "\n").map(String.init)
    }
}

/// ICEBOX_WITHOUT: each speed mechanism is on by default and off when named, seen from the
/// kernel in two daemons side by side, one with every mechanism and one without any. The
/// budget benchmark (scripts/bench/budget) measures what each buys through this switch, so a
/// switch that did not switch would make its figures lie.
@Suite(
    .enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"),
    .enabled(if: Sandbox.writableMounts.freezerV1 != nil, "the key hold and the stand-ins are for the v1 freezer; this host has none"),
    .enabled(if: Strace.path != nil, "needs strace to see the daemon's sched_setattr calls (scripts/test installs it)"),
    .timeLimit(.minutes(5)))
struct SpeedMechanismSwitchTests {
    static let everything = SpeedMechanism.allCases.map(\.rawValue).joined(separator: ",")

    /// A field of /proc/PID/status (RunAsUserTests reads them); nil once the process is gone.
    static func status(_ pid: pid_t, _ key: String) -> String? { (try? RunAsUserTests.status(pid))?[key] }

    /// Whether `pid` has CAP_IPC_LOCK in its permitted set.
    static func hasIPCLock(_ pid: pid_t) -> Bool { RunAsUserTests.capabilities(status(pid, "CapPrm")).contains("cap_ipc_lock") }

    /// The SCHED_FIFO requests `daemon` makes while `body` runs, as strace sees them.
    static func fifoRequests(of daemon: pid_t, during body: () throws -> Void) throws -> [String] {
        try calls("sched_setattr", of: daemon, during: body).filter { $0.contains("SCHED_FIFO") }
    }

    /// The calls of `syscall` that `daemon` makes while `body` runs, as strace sees them.
    static func calls(_ syscall: String, of daemon: pid_t, during body: () throws -> Void) throws -> [String] {
        try Strace.trace([syscall], of: daemon, during: body).filter { $0.contains(syscall) }
    }

    @Test(
        "on by default, off with ICEBOX_WITHOUT: the key hold, the image lock and CAP_IPC_LOCK, the stand-ins, the thaw's SCHED_FIFO, the freeze's step aside"
    )
    func switches() throws {
        let with = Sandbox()
        defer { with.close() }
        let without = Sandbox()
        defer { without.close() }
        let off = ["ICEBOX_WITHOUT": Self.everything]
        for (box, env) in [(with, [:]), (without, off)] {
            // Two processes: a thaw that wakes one task runs without SCHED_FIFO (below).
            let r = try box.icebox(
                ["launch", "--backend", "cgroup1", "--grace", "0", "first", "--", "sh", "-c", "sleep 1000 & exec sleep 1000"], extraEnv: env
            )
            #expect(r.status == 0, "\(r.output)")
        }
        let on = try #require(with.daemonPID)
        let bare = try #require(without.daemonPID)

        // The start event says what was left out.
        let started = without.events().first { $0.kind == .daemon && $0.detail.hasPrefix("daemon started") }?.detail ?? ""
        #expect(started.hasSuffix(", without thaw-priority, freezer-key-hold, image-lock, stand-ins, freeze-aside"), "\(started)")
        #expect(with.events().contains { $0.kind == .daemon && $0.detail.hasPrefix("daemon started") && !$0.detail.contains("without") })

        // The key hold: an empty v1 freezer cgroup held FROZEN, or none (FreezerKeyHoldTests
        // lists them).
        let keyHolds = FreezerKeyHoldTests()
        let hold = try #require(with.freezerRoot) + "/.freezer-hold-\(on)"
        #expect(keyHolds.holds(with) == [hold])
        #expect(Kernel.freezerState(hold) == "FROZEN")
        #expect(keyHolds.holds(without).isEmpty, "\(keyHolds.holds(without))")

        // The image lock: locked pages and CAP_IPC_LOCK, or neither (the lock follows the
        // daemon's readiness, so a reply has come after it).
        #expect(Scenario.eventually { (ProgramImageLockTests.statusKiB(on, "VmLck") ?? 0) > 1024 })
        #expect(ProgramImageLockTests.statusKiB(bare, "VmLck") == 0, "\(Self.status(bare, "VmLck") ?? "")")
        #expect(Self.hasIPCLock(on))
        #expect(!Self.hasIPCLock(bare))

        // The stand-ins: one parked after the first launch, and the next launch spawns through
        // it; none in the other, given as long.
        let parking = Clock.monotonicNanos()
        try #require(Scenario.eventually { !with.standIns().isEmpty }, "no stand-in was parked by default")
        // An absence is seen only by waiting: twice as long as the other took, and 0.5 s more
        // (a daemon that parks one does it 50 ms after a launch).
        usleep(useconds_t(min(2 * (Clock.monotonicNanos() - parking) / 1000 + 500_000, 5_000_000)))
        #expect(without.standIns().isEmpty)
        for box in [with, without] {
            let r = try box.icebox(["launch", "--backend", "cgroup1", "--grace", "0", "second", "--", "sleep", "1000"])
            #expect(r.status == 0, "\(r.output)")
        }
        let spawn = { (box: Sandbox) in box.events("second").first { $0.kind == .spawn }?.detail ?? "" }
        #expect(spawn(with).contains("by a stand-in"), "\(spawn(with))")
        #expect(!spawn(without).contains("by a stand-in"), "\(spawn(without))")
        #expect(without.standIns().isEmpty)

        // The thaw's SCHED_FIFO: asked for around each resume's write, or never.
        for (box, daemon, expected) in [(with, on, true), (without, bare, false)] {
            let requests = try Self.fifoRequests(of: daemon) {
                let s = try box.icebox(["suspend", "first"])
                #expect(s.status == 0, "\(s.output)")
                let r = try box.icebox(["resume", "first"])
                #expect(r.status == 0, "\(r.output)")
            }
            #expect(requests.isEmpty != expected, "daemon \(daemon): \(requests)")
            #expect(Kernel.freezerState(box.freezerRoot! + "/first") == "THAWED")
        }
        // Never around the thaw of one single-threaded process, whose one wake-up it slows
        // (Daemon.wakesSeveral).
        let single = try Self.fifoRequests(of: on) {
            for step in ["suspend", "resume"] {
                let r = try with.icebox([step, "second"])
                #expect(r.status == 0, "\(r.output)")
            }
        }
        #expect(single.isEmpty, "daemon \(on) thawing one process: \(single)")
        #expect(Kernel.freezerState(with.freezerRoot! + "/second") == "THAWED")

        // A SIGCONT thaw too, of a few tasks (at most Daemon.guardedSignalTasks, 64): a woken one
        // preempted the daemon before its reads; not of many, whose reads would hold the CPU.
        for (name, count, expected) in [("few", 3, true), ("many", 70, false)] {
            let sleepers = "for i in $(seq \(count - 1)); do sleep 1000 & done; wait"
            let l = try with.icebox(["launch", "--backend", "signal", "--grace", "0", name, "--", "sh", "-c", sleepers])
            #expect(l.status == 0, "\(l.output)")
            defer { _ = try? with.icebox(["terminate", name]) }
            let cgroup = try #require(with.cgroupRoot) + "/" + name
            try #require(Scenario.eventually { Sandbox.pids(in: cgroup).count == count }, "the sleepers did not start")
            let requests = try Self.fifoRequests(of: on) {
                for step in ["suspend", "resume"] {
                    let r = try with.icebox([step, name])
                    #expect(r.status == 0, "\(r.output)")
                }
            }
            #expect(requests.isEmpty != expected, "daemon \(on) thawing \(count) processes by SIGCONT: \(requests)")
        }

        // The freeze's step aside: while a freeze of 40 spinning processes waits for them to
        // run, the daemon leaves its CPU (sched_setaffinity) and takes its CPUs back once it
        // is done; never without. A freeze the first look finds done needs no step aside, so
        // the spinners are all there before the first, and there are five: one that waits is
        // enough (a single suspend found the freeze done at once in 1 of 6 runs here).
        let spin = "for i in $(seq 40); do (while :; do :; done) & done; wait"
        for (box, daemon, expected) in [(with, on, true), (without, bare, false)] {
            let cpus = try #require(Self.status(daemon, "Cpus_allowed_list"))
            let r = try box.icebox(["launch", "--backend", "cgroup1", "--grace", "0", "busy", "--", "sh", "-c", spin])
            #expect(r.status == 0, "\(r.output)")
            defer { _ = try? box.icebox(["terminate", "busy"]) }
            let cgroup = try #require(box.freezerRoot) + "/busy"
            try #require(Scenario.eventually { Sandbox.pids(in: cgroup).count > 40 }, "the 40 spinners did not start")
            let requests = try Self.calls("sched_setaffinity", of: daemon) {
                for _ in 0..<5 {
                    for step in ["suspend", "resume"] {
                        let r = try box.icebox([step, "busy"])
                        #expect(r.status == 0, "\(r.output)")
                    }
                }
            }
            if expected && (cpus.contains("-") || cpus.contains(",")) {  // two CPUs or more
                #expect(requests.count >= 2, "daemon \(daemon): \(requests)")
            } else {
                #expect(requests.isEmpty, "daemon \(daemon): \(requests)")
            }
            #expect(Scenario.eventually { Self.status(daemon, "Cpus_allowed_list") == cpus }, "the daemon's CPUs: \(cpus) before")
        }
    }

    @Test("an unknown name: icebox daemon exits 64 naming it and the known ones, and no daemon starts")
    func unknownName() throws {
        let box = Sandbox()
        defer { box.close() }
        let r = try box.icebox(["daemon"], extraEnv: ["ICEBOX_WITHOUT": "image-lock,mlock"])
        #expect(r.status == 64, "\(r.output)")
        #expect(r.stderr.contains("ICEBOX_WITHOUT: unknown mechanism 'mlock'"), "\(r.stderr)")
        #expect(r.stderr.contains("thaw-priority, freezer-key-hold, image-lock, stand-ins, freeze-aside"), "\(r.stderr)")
        #expect(box.daemonPID.map(Kernel.alive) != true)
    }
}

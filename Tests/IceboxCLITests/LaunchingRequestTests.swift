import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// Requests that reach an app while it is still launching (issue 33: `icebox suspend --grace
/// 0` half a second into a `launch --ready notify --ready-timeout 5s` froze the app, the
/// launch client still waited 40 s later, the ready deadline was gone, and a resume made the
/// app active without it ever being ready). A suspend or switch is refused (exit 75) with the
/// app left launching and its deadline kept; a terminate or evict ends it and answers both
/// clients. Judged from the kernel: the app's cgroup.freeze, `ps`, its cgroup.procs.
@Suite(
    .serialized,  // timed: run alone, not beside another test's 20 clients
    .enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct LaunchingRequestTests {
    /// An icebox command run on its own thread, timed: the launch client in the background.
    final class Background: @unchecked Sendable {
        private let lock = NSLock()
        private let done = DispatchSemaphore(value: 0)
        private var outcome: Sandbox.Result?
        private var seconds = 0.0

        /// Runs `icebox args` on its own thread, after `before` (a wait for the app) returns.
        init(_ box: Sandbox, _ args: [String], timeout: Double, before: @escaping @Sendable () -> Void = {}) {
            Thread { [self] in
                before()
                let started = Date()
                let r = Self.run(box, args, timeout: timeout)
                lock.withLock {
                    outcome = r
                    seconds = Date().timeIntervalSince(started)
                }
                done.signal()
            }.start()
        }

        /// Runs icebox with its output going to a file, and waits on this thread: no reader on
        /// the shared dispatch pool blocked for the command's life (`Sandbox.runToEnd` has two:
        /// ten launches waiting on their apps took the pool, and every `ps` the test ran then
        /// waited for them). Past `timeout` it is killed: status -1.
        static func run(_ box: Sandbox, _ args: [String], timeout: Double) -> Sandbox.Result? {
            let path = box.dir + "/output-" + UUID().uuidString
            guard FileManager.default.createFile(atPath: path, contents: nil), let out = FileHandle(forWritingAtPath: path) else {
                return nil
            }
            defer { try? out.close() }
            let p = Process()
            p.executableURL = URL(fileURLWithPath: Sandbox.binary)
            p.arguments = args
            p.environment = box.environment
            p.standardOutput = out
            p.standardError = out
            p.standardInput = FileHandle(forReadingAtPath: "/dev/null")
            do { try p.run() } catch { return nil }
            let deadline = Date().addingTimeInterval(timeout)
            while p.isRunning && Date() < deadline { usleep(5_000) }
            let timedOut = p.isRunning
            if timedOut { kill(p.processIdentifier, SIGKILL) }
            p.waitUntilExit()
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            return Sandbox.Result(status: timedOut ? -1 : p.terminationStatus, stdout: text, stderr: timedOut ? "(timed out)" : "")
        }

        /// Its result once it has returned (killed past its timeout: status -1).
        func wait() -> (result: Sandbox.Result?, seconds: Double) {
            done.wait()
            done.signal()
            return lock.withLock { (outcome, seconds) }
        }
    }

    /// The app's state from `ps --json --all`, run as the background clients are (its output
    /// to a file, waited for on the calling thread). `box.apps()` reads through the shared
    /// dispatch pool, which the rest of a parallel test run can hold for seconds: ten pollers
    /// on it once saw no app launching in 20 s, and the race ran after the apps had ended.
    static func state(_ box: Sandbox, _ name: String) -> AppState? {
        guard let r = Background.run(box, ["ps", "--json", "--all"], timeout: 10), r.status == 0 else { return nil }
        let apps = JSONLines.decode([AppRecord].self, r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? []
        return apps.first { $0.name == name }?.state
    }

    static func eventually(_ seconds: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
        try Scenario.eventually(seconds: seconds, condition)
    }

    /// `ps -o stat=` of the process: its run state as ps shows it ("T": stopped).
    static func psState(_ pid: pid_t) -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/ps")
        p.arguments = ["-o", "stat=", "-p", String(pid)]
        return ((try? Sandbox.runToEnd(p, timeout: 10, what: "ps"))?.stdout ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Whether the app's cgroup was asked to freeze: its v2 cgroup.freeze, or its v1 freezer.state
    /// (FREEZING or FROZEN) on a host without cgroup2.
    static func freezeRequested(_ cgroup: String) -> Bool {
        if !FileManager.default.fileExists(atPath: cgroup + "/cgroup.freeze") { return Kernel.freezerState(cgroup).hasPrefix("FR") }
        return ((try? String(contentsOfFile: cgroup + "/cgroup.freeze", encoding: .utf8)) ?? "").hasPrefix("1")
    }

    /// A notify-ready app that never says READY=1, launched in the background.
    static func launchNeverReady(_ box: Sandbox, _ name: String, readyTimeout: String = "5s") -> Background {
        Background(box, ["launch", "--ready", "notify", "--ready-timeout", readyTimeout, name, "--", "sleep", "1000"], timeout: 30)
    }

    static func awaitLaunching(_ box: Sandbox, _ name: String) throws -> AppRecord {
        #expect(try eventually { try box.apps()[name]?.state == .launching }, "\(name) never showed as launching")
        return try #require(try box.apps()[name])
    }

    /// The app is launching and running as far as the kernel says: not frozen, not stopped.
    static func expectLaunchingAndRunning(_ box: Sandbox, _ name: String, pid: pid_t, cgroup: String) throws {
        #expect(try box.apps()[name]?.state == .launching)
        #expect(!freezeRequested(cgroup) && !Kernel.frozen(cgroup), "the kernel shows \(name) frozen")
        let state = psState(pid)
        #expect(!state.isEmpty && !state.hasPrefix("T"), "ps shows \(name) as \(state)")
        #expect(Sandbox.pids(in: cgroup).contains(pid))
    }

    /// After the launch failed: the app is gone from the kernel and recorded as ended.
    static func expectGone(_ box: Sandbox, _ name: String, pid: pid_t, cgroup: String, as state: AppState) throws {
        #expect(try eventually { try box.apps()[name]?.state == state }, "\(name): \(String(describing: (try? box.apps())?[name]?.state))")
        #expect(!Kernel.alive(pid), "pid \(pid) still runs")
        #expect(!FileManager.default.fileExists(atPath: cgroup), "its cgroup is left")
    }

    @Test(
        "the issue's reproduction: a suspend during a launch is refused, and the launch client returns at its ready timeout",
        .enabled(if: Sandbox.cgroupMissing == nil, "\(Sandbox.cgroupMissing ?? "")"))
    func suspendDuringLaunch() throws {
        let box = Sandbox()
        defer { box.close() }
        let launch = Self.launchNeverReady(box, "lw")
        let record = try Self.awaitLaunching(box, "lw")
        let cgroup = try #require(Kernel.appCgroup(record))
        usleep(500_000)
        let suspend = try box.icebox(["suspend", "--grace", "0", "lw"])
        #expect(suspend.status == ExitCode.tryAgain.rawValue, "\(suspend.output)")
        #expect(suspend.output.contains("lw is still launching (waiting for READY=1, "), "\(suspend.output)")
        #expect(suspend.output.contains("left); try again when it is active"), "\(suspend.output)")
        try Self.expectLaunchingAndRunning(box, "lw", pid: record.pid, cgroup: cgroup)
        // compact's hint does not send the user to the suspend just refused.
        let compact = try box.icebox(["compact", "lw"])
        #expect(compact.status == 1 && compact.output.contains("(icebox suspend lw once it is active)"), "\(compact.output)")
        // A resume has nothing to do: it does not make the app active unready.
        let resume = try box.icebox(["resume", "lw"])
        #expect(resume.status == 0, "\(resume.output)")
        try Self.expectLaunchingAndRunning(box, "lw", pid: record.pid, cgroup: cgroup)

        let (result, seconds) = launch.wait()
        let r = try #require(result)
        #expect(r.status == 1, "\(r.output)")
        #expect(r.output.contains("lw was not ready (notify) within 5"), "\(r.output)")
        // The ready deadline held: 5 s after the launch, and then the app was terminated
        // (sleep goes at its SIGTERM), not 40 s or never.
        #expect(seconds >= 4.5 && seconds < 9, "the launch client returned after \(seconds) s")
        try Self.expectGone(box, "lw", pid: record.pid, cgroup: cgroup, as: .terminated)
    }

    @Test(
        "a switch away from a launching app leaves it launching and says so (exit 75)",
        .enabled(if: Sandbox.cgroupMissing == nil, "\(Sandbox.cgroupMissing ?? "")"))
    func switchDuringLaunch() throws {
        let box = Sandbox()
        defer { box.close() }
        #expect(try box.icebox(["launch", "other", "--", "sleep", "1000"]).status == 0)
        let launch = Self.launchNeverReady(box, "lw", readyTimeout: "6s")
        let record = try Self.awaitLaunching(box, "lw")
        let cgroup = try #require(Kernel.appCgroup(record))
        let switched = try box.icebox(["switch", "other"])
        #expect(switched.status == ExitCode.tryAgain.rawValue, "\(switched.output)")
        #expect(switched.output.contains("lw is still launching"), "\(switched.output)")
        try Self.expectLaunchingAndRunning(box, "lw", pid: record.pid, cgroup: cgroup)
        #expect(try box.apps()["other"]?.state == .active)
        let (result, seconds) = launch.wait()
        #expect(result?.status == 1 && seconds < 11, "after \(seconds) s: \(result?.output ?? "no result")")
        try Self.expectGone(box, "lw", pid: record.pid, cgroup: cgroup, as: .terminated)
    }

    @Test(
        "a terminate or evict during a launch answers the launch client (failed, with the reason) and its own",
        .enabled(if: Sandbox.cgroupMissing == nil, "\(Sandbox.cgroupMissing ?? "")"), arguments: ["terminate", "evict"])
    func endDuringLaunch(_ command: String) throws {
        let box = Sandbox("end\(command)")
        defer { box.close() }
        let launch = Self.launchNeverReady(box, "lw", readyTimeout: "20s")
        let record = try Self.awaitLaunching(box, "lw")
        let cgroup = try #require(Kernel.appCgroup(record))
        let end = try box.icebox([command, "lw"])
        #expect(end.status == 0, "\(end.output)")
        #expect(end.output.contains("launching → \(command == "evict" ? "evicted" : "terminated")"), "\(end.output)")
        let (result, seconds) = launch.wait()
        let r = try #require(result)
        #expect(r.status == 1, "\(r.output)")
        #expect(r.output.contains("lw was \(command == "evict" ? "evicted" : "terminated") before it was ready"), "\(r.output)")
        #expect(seconds < 10, "the launch client waited \(seconds) s, not for the ready deadline")
        try Self.expectGone(box, "lw", pid: record.pid, cgroup: cgroup, as: command == "evict" ? .evicted : .terminated)
    }

    @Test(
        "a daemon stopped leaving its apps tells the launch client, and the next one keeps the launch and its deadline",
        .enabled(if: Sandbox.cgroupMissing == nil, "\(Sandbox.cgroupMissing ?? "")"))
    func stopDuringLaunch() throws {
        let box = Sandbox()
        defer { box.close() }
        let launch = Self.launchNeverReady(box, "lw", readyTimeout: "8s")
        let record = try Self.awaitLaunching(box, "lw")
        let cgroup = try #require(Kernel.appCgroup(record))
        #expect(try box.icebox(["daemon", "--stop"]).status == 0)
        let (result, seconds) = launch.wait()
        let r = try #require(result)
        #expect(r.status == ExitCode.unavailable.rawValue, "\(r.output)")
        #expect(r.output.contains("the daemon stopped while lw was launching; it is left launching"), "\(r.output)")
        #expect(seconds < 5, "the launch client waited \(seconds) s")
        // The next daemon (started by ps) adopts it still launching and ends it at its deadline.
        try Self.expectLaunchingAndRunning(box, "lw", pid: record.pid, cgroup: cgroup)
        try Self.expectGone(box, "lw", pid: record.pid, cgroup: cgroup, as: .terminated)
    }

    @Test("10 launches racing suspends, resumes, switches, terminates and evicts: every client returns within its deadline")
    func concurrentLaunches() throws {
        let box = Sandbox()
        defer { box.close() }
        // One daemon, started before the race and kept from its idle exit by an app of its own.
        #expect(try box.icebox(["launch", "keeper", "--", "sleep", "1000"]).status == 0)
        let names = (0..<10).map { "c\($0)" }
        let launches = names.map { Self.launchNeverReady(box, $0, readyTimeout: "6s") }
        // Every request a client can send to a launching app, each app its own mix.
        let plans: [[String]] = [
            ["suspend", "--grace", "0"], ["resume"], ["switch"], ["suspend"], ["terminate"], ["evict"], ["suspend", "--grace", "0"],
            ["switch"], ["resume", "--wait-ready"], ["terminate", "--timeout", "1s"],
        ]
        // Each request as soon as its app shows as launching.
        let requests = zip(names, plans).map { name, plan in
            Background(box, plan + [name], timeout: 20) {
                _ = Self.eventually(20) { Self.state(box, name) == .launching }
            }
        }
        var reached = 0
        for (i, request) in requests.enumerated() {
            let (result, seconds) = request.wait()
            let r = try #require(result, "\(plans[i]) \(names[i]) did not return")
            #expect([0, 1, ExitCode.tryAgain.rawValue].contains(r.status), "\(plans[i]) \(names[i]): \(r.output)")
            #expect(seconds < 15, "\(plans[i]) \(names[i]) took \(seconds) s")
            // Nothing launching is sent to the background (a switch's other apps included).
            #expect(!r.output.contains("launching → background"), "\(plans[i]) \(names[i]): \(r.output)")
            if !r.output.contains("is not running") { reached += 1 }
        }
        #expect(reached >= 5, "only \(reached) of the requests found their app still there: the race was not run")
        for (i, launch) in launches.enumerated() {
            let (result, seconds) = launch.wait()
            let r = try #require(result, "launch \(names[i]) did not return")
            // None becomes ready: each fails, at its ready deadline (6 s) or when ended sooner.
            #expect(r.status == 1, "launch \(names[i]): \(r.output)")
            #expect(seconds < 20, "launch \(names[i]) returned after \(seconds) s")
        }
        // And the kernel agrees with the registry: nothing launching, frozen or left running.
        let apps = try box.apps()
        for name in names {
            let app = try #require(apps[name])
            #expect(app.state.isEnded, "\(name) is \(app.state.rawValue)")
            #expect(!Kernel.alive(app.pid), "\(name) pid \(app.pid) still runs")
            #expect(app.cgroup.map { !FileManager.default.fileExists(atPath: $0) } ?? true, "\(name)'s cgroup is left")
        }
    }
}

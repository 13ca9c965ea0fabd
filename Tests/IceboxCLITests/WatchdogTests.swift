import Foundation
import Glibc
import IceboxCore
import Testing

/// --watchdog on real apps: WATCHDOG_USEC in the environment, a missed ping logged or acted
/// on, and no false alarm while the app is suspended.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct WatchdogTests {
    /// A python app that pings every `every` seconds for `count` pings, then goes quiet.
    func pinger(_ box: Sandbox, count: Int) -> String {
        box.pythonApp(
            extra: """
                usec = int(os.environ['WATCHDOG_USEC'])
                import threading
                def ping():
                    for _ in range(\(count)):
                        notify('WATCHDOG=1')
                        time.sleep(usec / 1e6 / 4)
                threading.Thread(target=ping, daemon=True).start()
                """)
    }

    func waitFor(_ what: String, _ seconds: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            usleep(50_000)
        }
        return try condition()
    }

    @Test("an app that stops pinging is logged; suspended for longer than the interval, it is not")
    func missedPingIsLoggedNotWhileSuspended() throws {
        let box = Sandbox("watchdog")
        defer { box.close() }
        // Pings for ~1 s (8 pings at a quarter of 500 ms), then stops.
        let app = pinger(box, count: 8)
        let r = try box.icebox(["launch", "--ready", "notify", "--watchdog", "500ms", "quiet", "--", "python3", app])
        #expect(r.status == 0, "\(r.output)")
        #expect(try box.icebox(["suspend", "--grace", "0", "quiet"]).status == 0)
        usleep(1_500_000)  // three intervals frozen: the watchdog is paused
        #expect(!box.events("quiet").contains { $0.kind == .watchdog }, "a false alarm while suspended")
        #expect(try box.icebox(["resume", "quiet"]).status == 0)
        #expect(waitFor("the watchdog event") { box.events("quiet").contains { $0.kind == .watchdog } })
        let event = try #require(box.events("quiet").first { $0.kind == .watchdog })
        #expect(event.detail.contains("no WATCHDOG=1 for 500 ms") && event.detail.contains("logged only"), "\(event.detail)")
        #expect(try box.apps()["quiet"]?.state == .active, "log only: the app runs on")
    }

    @Test("--watchdog-action restart kills a silent app and launches it again")
    func restartSilentApp() throws {
        let box = Sandbox("wdrestart")
        defer { box.close() }
        let app = pinger(box, count: 2)
        let r = try box.icebox([
            "launch", "--ready", "notify", "--watchdog", "400ms", "--watchdog-action", "restart", "flaky", "--", "python3", app,
        ])
        #expect(r.status == 0, "\(r.output)")
        let first = try #require(try box.apps()["flaky"]?.pid)
        #expect(
            try waitFor("a new instance") {
                guard let now = try box.apps()["flaky"] else { return false }
                return now.pid != first && now.state == .active
            })
        #expect(!Kernel.alive(first))
        #expect(box.events("flaky").contains { $0.kind == .watchdog && $0.detail.contains("launching it again") })
    }

    @Test(
        "--watchdog-action restart stops at the start limit: an app that sets WATCHDOG_USEC=1 is relaunched at most the burst, then ends with the reason"
    )
    func restartStartLimit() throws {
        let box = Sandbox("wdlimit")
        defer { box.close() }
        // Asks for a 1 µs watchdog and never pings: before, relaunched ~18 times a second for good.
        let app = box.pythonApp(extra: "notify('WATCHDOG_USEC=1')")
        let r = try box.icebox([
            "launch", "--ready", "notify", "--watchdog", "1s", "--watchdog-action", "restart", "hasty", "--", "python3", app,
        ])
        #expect(r.status == 0, "\(r.output)")
        #expect(
            try waitFor("the start limit", 15) {
                guard let now = try box.apps()["hasty"] else { return false }
                return now.state.isEnded && now.ending?.contains("start limit hit") == true
            })
        let ps = try box.icebox(["ps", "-a", "-j"])
        let record = try #require(
            JSONLines.decode([AppRecord].self, ps.stdout.trimmingCharacters(in: .whitespacesAndNewlines))?.first { $0.name == "hasty" })
        // The defaults, systemd's: 5 restarts in 10 s.
        #expect(record.ending?.hasSuffix("start limit hit: 5 restarts in 10 s, not restarted") == true, "\(record.ending ?? "")")
        usleep(1_000_000)  // nothing comes back
        #expect(try box.apps()["hasty"]?.state.isEnded == true)
        let events = box.events("hasty")
        #expect(events.filter { $0.kind == .watchdog && $0.detail.contains("launching it again") }.count == 5)
        #expect(events.contains { $0.kind == .watchdog && $0.detail.contains("below the least interval") })
        #expect(events.contains { $0.kind == .watchdog && $0.detail.contains("start limit hit: 5 restarts in 10 s") })
        #expect(events.contains { $0.kind == .exit && $0.detail.contains("start limit hit") })
    }

    @Test("--start-limit-burst and --start-limit-interval are kept with the launch options, across a daemon restart")
    func startLimitOptionsKept() throws {
        let box = Sandbox("wdkept")
        defer { box.close() }
        let r = try box.icebox([
            "launch", "--watchdog", "10s", "--watchdog-action", "restart", "--start-limit-burst", "3", "--start-limit-interval", "30s",
            "kept", "--", "sleep", "1000",
        ])
        #expect(r.status == 0, "\(r.output)")
        try box.killDaemon()
        let options = try #require(try box.apps()["kept"]?.options, "re-adopted by the next daemon")
        #expect(options.startLimitBurst == 3 && options.startLimitIntervalNanos == 30_000_000_000)
    }

    @Test("--watchdog-action needs --watchdog; bad values exit 64")
    func usage() throws {
        let box = Sandbox("wdusage")
        defer { box.close() }
        #expect(try box.icebox(["launch", "--watchdog-action", "kill", "x", "--", "true"]).status == 64)
        #expect(try box.icebox(["launch", "--watchdog", "1s", "--watchdog-action", "reboot", "x", "--", "true"]).status == 64)
        #expect(try box.icebox(["launch", "--watchdog", "0", "x", "--", "true"]).status == 64)
        #expect(try box.icebox(["launch", "--watchdog", "1us", "x", "--", "true"]).status == 64, "below the least interval")
        #expect(try box.icebox(["launch", "--watchdog", "1s", "--start-limit-burst", "3", "x", "--", "true"]).status == 64)
        for burst in ["0", "-1", "1001", "many"] {
            let r = try box.icebox([
                "launch", "--watchdog", "1s", "--watchdog-action", "restart", "--start-limit-burst", burst, "x", "--", "true",
            ])
            #expect(r.status == 64, "--start-limit-burst \(burst)")
        }
    }
}

import Glibc
import IceboxSystem
import Testing

@testable import IceboxCore

/// The schedule of app deadlines: every change to what a deadline is made of reaches it, a
/// turn of the loop gets exactly the apps whose time has come, and ended apps leave it.
struct AppDeadlinesTests {
    /// A live app with no deadline of its own yet (active, no probe, no timers).
    static func app(_ name: String) throws -> LiveApp {
        var options = LaunchOptions(name: name, command: ["sleep", "100"])
        options.ready = .exec
        let record = AppRecord(
            name: name, options: options, pid: getpid(), state: .launching, sinceMonotonicNanos: 0, sinceWall: "",
            launchedWall: "", backend: .signal)
        var lifecycle = AppLifecycle(record: record, launchStart: 0)
        _ = lifecycle.handle(.ready, now: 0)
        let app = LiveApp(
            lifecycle: lifecycle, handle: try ProcessHandle(adopting: getpid()),
            cgroups: AppCgroups.adopt(v2: nil, freezerV1: nil, memoryV1: nil),
            notify: .shared(path: "/nonexistent"))
        #expect(app.nextDeadline == nil)
        return app
    }

    @Test func theEarliestDeadlineAndTheAppsWhoseTimeHasCome() throws {
        let schedule = AppDeadlines()
        let a = try Self.app("a"), b = try Self.app("b"), c = try Self.app("c")
        for app in [a, b, c] { schedule.add(app) }
        #expect(schedule.earliest == nil)
        a.probeAt = 300
        b.removal = CgroupRemoval(cgroups: b.cgroups, recheckAt: 100)
        c.compactAt = 200
        #expect(schedule.earliest == 100)
        #expect(schedule.takeDue(now: 99).isEmpty)
        #expect(schedule.takeDue(now: 200) == ["b", "c"])
        #expect(schedule.earliest == 300, "taken off until touched again")
        schedule.touch(b)
        schedule.touch(c)
        #expect(schedule.earliest == 100, "still due: a handler that leaves the deadline gets the app again")
        b.removal = nil
        c.compactAt = 250
        #expect(schedule.takeDue(now: 1_000) == ["c", "a"])
    }

    @Test func aDeadlineMovedLaterOrEarlierLeavesNoStaleWakeUp() throws {
        let schedule = AppDeadlines()
        let a = try Self.app("a")
        schedule.add(a)
        a.lockCheckAt = 100
        #expect(schedule.earliest == 100)
        a.lockCheckAt = 500
        #expect(schedule.earliest == 500, "the entry at 100 is stale")
        a.lockCheckAt = 50
        #expect(schedule.takeDue(now: 60) == ["a"])
        #expect(schedule.takeDue(now: 10_000).isEmpty, "the entry at 500 is stale too")
        // Every property the deadline is made of tells the schedule.
        schedule.touch(a)
        a.lockCheckAt = nil
        a.removal = CgroupRemoval(cgroups: a.cgroups, recheckAt: 7)
        #expect(schedule.earliest == 7)
        a.removal = nil
        _ = a.notifyDrops.drop(from: 1, now: 0)
        _ = a.notifyDrops.take(now: 0)
        _ = a.notifyDrops.drop(from: 1, now: 1)
        #expect(schedule.earliest == NotifyDrops.logIntervalNanos)
        _ = a.notifyDrops.take(now: 2)
        #expect(schedule.earliest == nil)
        _ = a.lifecycle.handle(.suspend(waiter: nil, notice: .init(signal: SIGUSR1, why: "test")), now: 1_000)
        #expect(schedule.earliest == a.lifecycle.nextDeadline && schedule.earliest != nil, "the grace period's end")
    }

    @Test func anEndedAppLeavesTheScheduleAndItsNameCanBeReused() throws {
        let schedule = AppDeadlines()
        let old = try Self.app("web")
        schedule.add(old)
        old.probeAt = 100
        schedule.remove(old)
        old.probeAt = 50
        #expect(schedule.earliest == nil)
        #expect(old.deadlines == nil)
        let new = try Self.app("web")
        schedule.add(new)
        new.probeAt = 400
        #expect(schedule.earliest == 400)
        #expect(schedule.takeDue(now: 400) == ["web"])
    }

    @Test func manyChangesKeepTheHeapBounded() throws {
        let schedule = AppDeadlines()
        let apps = try (0..<50).map { try Self.app("a\($0)") }
        for app in apps { schedule.add(app) }
        for round in 0..<200 {
            for (i, app) in apps.enumerated() {
                app.removal = CgroupRemoval(cgroups: app.cgroups, recheckAt: UInt64(1_000_000 - round * 100 + i))
            }
            _ = schedule.earliest
        }
        #expect(schedule.takeDue(now: .max).count == 50, "each app once")
    }
}

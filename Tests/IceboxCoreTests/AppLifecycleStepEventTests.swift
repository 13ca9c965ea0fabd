import Glibc
import IceboxSystem
import Testing

@testable import IceboxCore

/// The event of each step travels with the line a waiting client gets for it (the
/// `event` member of a `line` reply), so that IceboxClient builds typed results from data:
/// the same event the log gets, in the same transition. Without root.
@Suite("AppLifecycle: a waiter's lines carry their step's event")
struct AppLifecycleStepEventTests {
    typealias T = AppLifecycleTests
    static let second = T.second

    /// The (line, event) pairs for `waiter` among `fx`, reports and settles alike.
    static func told(_ waiter: Int, _ fx: [LifecycleEffect]) -> [(line: String?, event: Event?)] {
        fx.compactMap { effect in
            switch effect {
            case .report(waiter, let line, _, let event): return (line, event)
            case .settle(waiter, let line, _, let event): return (line, event)
            default: return nil
            }
        }
    }

    static func logged(_ fx: [LifecycleEffect]) -> [Event] {
        fx.compactMap { if case .log(let e) = $0 { return e } else { return nil } }
    }

    @Test("suspend: the notice's event (its signal as the reason, the grace granted), then the freeze's (grace used, how it ended)")
    func suspendCarriesNoticeAndFreeze() {
        var l = T.lifecycle(in: .active)
        var fx = l.handle(.suspend(waiter: 1, notice: T.usr1, grace: 3 * Self.second), now: 10_000)
        let notice = Self.told(1, fx)
        #expect(notice.count == 1)
        #expect(notice.first?.event == Self.logged(fx).first, "the very event the log gets")
        #expect(notice.first?.event?.kind == .notice && notice.first?.event?.reason == "SIGUSR1")
        #expect(notice.first?.event?.graceNanos == 3 * Self.second)
        _ = l.handle(.notify(NotifyMessage.parse("READY=1")), now: 510_000)
        fx = l.handle(.freezeConfirmed(T.frozen), now: 600_000)
        let freeze = Self.told(1, fx).first?.event
        #expect(freeze?.kind == .freeze && freeze?.reason == "READY=1")
        #expect(freeze?.durationNanos == 80_000 && freeze?.backend == .cgroup2 && freeze?.tasks == 1)
        #expect(freeze?.graceNanos == 600_000 - 10_000 - 80_000, "the grace used: notice → the freeze's start")
    }

    @Test("a suspend without a notice says why in its reason: no handler, or --background-signal none")
    func noNoticeReason() {
        var l = T.lifecycle(in: .active)
        var fx = l.handle(.suspend(waiter: 1, notice: nil, grace: 0), now: 10)
        #expect(Self.told(1, fx).first?.event?.reason == "no-handler")
        var o = l.record.options
        o.backgroundSignal = NoticeSignal.none
        var record = T.record(ready: .notify)
        record.options = o
        var quiet = AppLifecycle(record: record, launchStart: 1)
        _ = quiet.handle(.notify(NotifyMessage.parse("READY=1")), now: 2)
        fx = quiet.handle(.suspend(waiter: 2, notice: nil, grace: 0), now: 10)
        #expect(Self.told(2, fx).first?.event?.reason == "none")
        fx = quiet.handle(.freezeConfirmed(T.frozen), now: 100_000)
        #expect(Self.told(2, fx).first?.event?.reason == "grace 0")
    }

    @Test("resume: the thaw's event; with waitReady the ready event (resume → READY=1) settles it")
    func resumeCarriesThawAndReady() {
        var l = T.lifecycle(in: .suspended)
        _ = l.handle(.resume(waiter: 4, waitReady: true), now: 1_000)
        var fx = l.handle(.thawConfirmed(FreezeOutcome(backend: .cgroup2, durationNanos: 20_000, tasks: 1)), now: 21_000)
        let thaw = Self.told(4, fx).first?.event
        #expect(thaw?.kind == .thaw && thaw?.durationNanos == 20_000 && thaw?.tasks == 1)
        fx = l.handle(.notify(NotifyMessage.parse("READY=1")), now: 51_000)
        let ready = Self.told(4, fx).first?.event
        #expect(ready?.kind == .ready && ready?.durationNanos == 50_000)
    }

    @Test("a resume during the grace carries the resume event; a no-op carries none")
    func resumeDuringGraceAndNoOp() {
        var l = T.lifecycle(in: .background)
        let fx = l.handle(.resume(waiter: 5), now: 3_000)
        #expect(Self.told(5, fx).first?.event?.kind == .resume)
        let again = l.handle(.resume(waiter: 6), now: 4_000)
        #expect(Self.told(6, again).count == 1 && Self.told(6, again).first?.event == nil)
    }

    @Test("terminate: the exit event says SIGTERM when it sufficed, SIGKILL after the time-out; evict: SIGKILL")
    func endReasons() {
        var l = T.lifecycle(in: .active)
        _ = l.handle(.terminate(waiter: 1, timeout: Self.second), now: 100)
        _ = l.handle(.exited(.signaled(SIGTERM)), now: 200)
        var fx = l.handle(.cleanedUp(leftovers: 0, problems: []), now: 300)
        var end = Self.told(1, fx).first?.event
        #expect(end?.kind == .exit && end?.to == .terminated && end?.reason == "SIGTERM" && end?.exitStatus == 143)
        #expect(end?.durationNanos == 200)

        l = T.lifecycle(in: .active)
        _ = l.handle(.terminate(waiter: 2, timeout: Self.second), now: 100)
        _ = l.handle(.tick, now: 100 + Self.second)
        _ = l.handle(.exited(.signaled(SIGKILL)), now: 200 + Self.second)
        fx = l.handle(.cleanedUp(leftovers: 0, problems: []), now: 300 + Self.second)
        end = Self.told(2, fx).first?.event
        #expect(end?.reason == "SIGKILL" && end?.exitStatus == 137)

        l = T.lifecycle(in: .suspended)
        _ = l.handle(.evict(waiter: 3), now: 100)
        _ = l.handle(.exited(.signaled(SIGKILL)), now: 150)
        fx = l.handle(.cleanedUp(leftovers: 0, problems: []), now: 190)
        end = Self.told(3, fx).first?.event
        #expect(end?.kind == .evict && end?.to == .evicted && end?.reason == "SIGKILL" && end?.durationNanos == 90)
    }

    @Test("a failed step's line carries no event")
    func failuresCarryNoEvent() {
        var l = T.lifecycle(in: .freezing)
        _ = l.handle(.suspend(waiter: 5, notice: T.usr1), now: 3_000)
        let fx = l.handle(.freezeFailed("the kernel said no"), now: 4_000)
        #expect(Self.told(5, fx).count == 1 && Self.told(5, fx).first?.event == nil)
    }
}

import Testing

@testable import IceboxCore

@Suite("cgroup.events and sd_notify messages")
struct MessageParsingTests {
    @Test func cgroupEventsParsesBothKeys() {
        #expect(CgroupEvents.parse("populated 1\nfrozen 0\n") == CgroupEvents(populated: true, frozen: false))
        #expect(CgroupEvents.parse("populated 0\nfrozen 1\n") == CgroupEvents(populated: false, frozen: true))
        #expect(CgroupEvents.parse("frozen 1\npopulated 1") == CgroupEvents(populated: true, frozen: true))
    }

    @Test func cgroupEventsDefaultsToFalse() {
        #expect(CgroupEvents.parse("") == CgroupEvents(populated: false, frozen: false))
        #expect(CgroupEvents.parse("populated\nfrozen yes\nother 1\n") == CgroupEvents(populated: false, frozen: false))
    }

    @Test func notifyReady() {
        let m = NotifyMessage.parse("READY=1")
        #expect(m.ready)
        #expect(!m.stopping)
        #expect(m.status == nil)
        #expect(m.extendNanos == nil)
    }

    @Test func notifyReadyNeedsTheValueOne() {
        #expect(!NotifyMessage.parse("READY=0").ready)
        #expect(!NotifyMessage.parse("READY").ready)
        #expect(!NotifyMessage.parse("ready=1").ready)
    }

    @Test func notifyStatusKeepsEverythingAfterTheFirstEquals() {
        let m = NotifyMessage.parse("READY=1\nSTATUS=listening on port=8000, mode=a=b\n")
        #expect(m.ready)
        #expect(m.status == "listening on port=8000, mode=a=b")
        #expect(NotifyMessage.parse("STATUS=").status == "")
    }

    @Test func notifyExtendTimeoutIsMicroseconds() {
        #expect(NotifyMessage.parse("EXTEND_TIMEOUT_USEC=2000000").extendNanos == 2_000_000_000)
        #expect(NotifyMessage.parse("EXTEND_TIMEOUT_USEC=0").extendNanos == 0)
        #expect(NotifyMessage.parse("EXTEND_TIMEOUT_USEC=abc").extendNanos == nil)
        #expect(NotifyMessage.parse("EXTEND_TIMEOUT_USEC=-5").extendNanos == nil)
    }

    @Test func notifyExtendTimeoutDoesNotWrapAround() {
        // 18446744073709552 µs × 1000 overflows UInt64; wrapping turns a request for ~584 years
        // into 384 ns. It should saturate (or be refused), never shrink.
        let m = NotifyMessage.parse("EXTEND_TIMEOUT_USEC=18446744073709552")
        #expect(m.extendNanos == UInt64.max)
    }

    @Test func notifyStopping() {
        let m = NotifyMessage.parse("STOPPING=1\n")
        #expect(m.stopping)
        #expect(!m.ready)
    }

    @Test func notifyKeepsUnknownKeysAndIgnoresGarbage() {
        let m = NotifyMessage.parse("garbage line\nMAINPID=4242\n\nWATCHDOG=1\nno equals here\nREADY=1\n")
        #expect(m.ready)
        #expect(m.fields == ["MAINPID": "4242", "WATCHDOG": "1", "READY": "1"])
        #expect(!m.stopping)
        #expect(m.status == nil)
    }

    @Test func notifyLaterAssignmentsWin() {
        #expect(NotifyMessage.parse("STATUS=a\nSTATUS=b").status == "b")
        #expect(NotifyMessage.parse("").fields.isEmpty)
    }
}

import Dispatch
import Foundation
import Glibc
import Testing

@testable import IceboxSystem

/// PreemptionGuard on a thread of the test's own, so the policy it changes and puts back is
/// never that of a thread other tests run on.
@Suite("A stretch no woken task preempts")
struct PreemptionGuardTests {
    /// Policy, nice and whether the kernel refused, as seen from the thread the guard ran on.
    struct Seen: Sendable {
        var inside: Int32 = -1, after: Int32 = -1, niceAfter: Int32 = 99, refused = false, childPolicy: Int32 = -1
    }

    /// SCHED_IDLE, which Glibc's Swift overlay leaves out (<bits/sched.h> defines it under
    /// __USE_GNU).
    static let schedIdle: Int32 = 5

    /// PRIO_PROCESS with who 0: on Linux the nice of the calling thread alone.
    static let thisThread = (__priority_which_t(PRIO_PROCESS.rawValue), id_t(0))

    /// The exit status of `sh -c 'exit POLICY'`, POLICY read by the shell's own child from the
    /// shell's /proc/PID/sched: the policy a process started inside the stretch runs.
    static func policyOfAChild() -> Int32 {
        var pid: pid_t = 0
        let script = "exit $(awk '/^policy/ { print $3 }' /proc/$$/sched)"
        let words: [String] = ["/bin/sh", "-c", script]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        guard posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : -1
    }

    @Test(.enabled(if: Capabilities.hasEffective("cap_sys_nice") == true, "SCHED_FIFO needs CAP_SYS_NICE, which this test process lacks"))
    func runsTheBodyAtFIFOAndPutsPolicyAndNiceBack() throws {
        let seen = OwnThread.run {
            var seen = Seen()
            _ = setpriority(Self.thisThread.0, Self.thisThread.1, 4)
            var guardian = PreemptionGuard()
            var child: Int32 = -1
            seen.inside = guardian.run {
                child = Self.policyOfAChild()
                return sched_getscheduler(0)
            }
            seen.childPolicy = child
            seen.refused = guardian.refused
            seen.after = sched_getscheduler(0)
            errno = 0
            seen.niceAfter = getpriority(Self.thisThread.0, Self.thisThread.1)
            return seen
        }
        #expect(!seen.refused)
        // sched_getscheduler ORs in SCHED_RESET_ON_FORK (0x40000000) where it is set.
        #expect(seen.inside == SCHED_FIFO | 0x4000_0000, "SCHED_FIFO, reset on fork")
        #expect(seen.after == SCHED_OTHER)
        #expect(seen.niceAfter == 4, "the nice the thread had is put back")
        #expect(seen.childPolicy == SCHED_OTHER, "a process started in the stretch must not run real-time")
    }

    /// An engine embedded in a test process (Supervisor: Daemon's `ownsProcess` false) runs
    /// its thaws with the guard disabled: no thread of someone else's program goes real-time.
    @Test(.enabled(if: Capabilities.hasEffective("cap_sys_nice") == true, "SCHED_FIFO needs CAP_SYS_NICE, which this test process lacks"))
    func disabledRunsTheBodyAsItIs() {
        let seen = OwnThread.run {
            var seen = Seen()
            var guardian = PreemptionGuard(enabled: false)
            seen.inside = guardian.run { sched_getscheduler(0) }
            seen.refused = guardian.refused
            seen.after = sched_getscheduler(0)
            return seen
        }
        #expect(seen.inside == SCHED_OTHER, "a disabled guard asked for SCHED_FIFO")
        #expect(seen.after == SCHED_OTHER && !seen.refused)
    }

    @Test func leavesAPolicySomeoneChoseAlone() {
        // SCHED_IDLE needs no privilege to enter; the guard must not turn it into FIFO and
        // back into SCHED_OTHER.
        let seen = OwnThread.run {
            var seen = Seen()
            var param = sched_param(sched_priority: 0)
            guard sched_setscheduler(0, Self.schedIdle, &param) == 0 else { return seen }
            var guardian = PreemptionGuard()
            seen.inside = guardian.run { sched_getscheduler(0) }
            seen.refused = guardian.refused
            // Asked again, it runs the body as it is without trying.
            guardian.run {}
            seen.after = sched_getscheduler(0)
            return seen
        }
        #expect(seen.inside == Self.schedIdle)
        #expect(seen.after == Self.schedIdle)
        #expect(seen.refused)
    }
}

import Foundation
import IceboxCore
import Testing

/// The event log is appended in time order: a transition's events are stamped when it
/// happens, and what its effects log when they are carried out comes after them.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct EventOrderTests {
    @Test("a terminate of a suspended app logs its terminate before the thaw for it: log --json NAME has non-decreasing times")
    func terminateOfASuspendedAppIsLoggedInTimeOrder() throws {
        let box = Sandbox("eventorder")
        defer { box.close() }
        let launched = try box.icebox(["launch", "--grace", "0", "sleeper", "--", "sleep", "1000"])
        #expect(launched.status == 0, "\(launched.output)")
        let suspended = try box.icebox(["suspend", "sleeper"])
        #expect(suspended.status == 0, "\(suspended.output)")
        let terminated = try box.icebox(["terminate", "--timeout", "5s", "sleeper"])
        #expect(terminated.status == 0, "\(terminated.output)")

        let log = try box.icebox(["log", "--json", "sleeper"])
        #expect(log.status == 0, "\(log.output)")
        let events = log.stdout.split(separator: "\n").compactMap { JSONLines.decode(Event.self, String($0)) }
        let kinds = events.map(\.kind)
        // The thaw that lets the app act on SIGTERM is one write the kernel completes at once:
        // its event was appended before the terminate's, which was stamped earlier.
        let terminate = kinds.firstIndex(of: .terminate)
        let thaw = events.firstIndex { $0.kind == .thaw && $0.detail.contains("SIGTERM") }
        #expect(terminate != nil && thaw != nil, "\(log.stdout)")
        if let terminate, let thaw { #expect(terminate < thaw, "\(log.stdout)") }
        for (a, b) in zip(events, events.dropFirst()) {
            #expect(a.time <= b.time && a.monotonicNanos <= b.monotonicNanos, "\(a.kind) at \(a.time) before \(b.kind) at \(b.time)")
        }
    }
}

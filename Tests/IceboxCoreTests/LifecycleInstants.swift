@testable import IceboxCore

/// The instants the lifecycle's tests hand it: a monotonic time as the test gives it, and a
/// wall time that follows from it (`wallBase` plus the same nanoseconds), so that a test which
/// names only monotonic times also knows every wall stamp it must see. Nothing here reads a
/// clock: a transition's timestamps come from its instant alone.
enum LifecycleInstants {
    /// 2001-09-09T01:46:40Z: far from today, so a stamp read from the clock would show.
    static let wallBase: Int64 = 1_000_000_000_000_000_000

    static func at(_ monotonic: UInt64) -> Instant {
        let offset = Int64(clamping: monotonic)
        return Instant(monotonicNanos: monotonic, wallNanos: offset > Int64.max - wallBase ? Int64.max : wallBase + offset)
    }
}

extension AppLifecycle {
    /// `handle(_:now:)` at the test instant of monotonic time `now` (LifecycleInstants).
    mutating func handle(_ input: LifecycleInput, now: UInt64) -> [LifecycleEffect] {
        handle(input, now: LifecycleInstants.at(now))
    }

    init(adopting record: AppRecord, now: UInt64) {
        self.init(adopting: record, now: LifecycleInstants.at(now))
    }

    var state: AppState { record.state }
    var isEvicting: Bool {
        if case .ending(.evict, _, _) = phase { return true }
        if case .cleaningUp(.evicted) = phase { return true }
        return false
    }
    var grace: Grace? {
        switch phase {
        case .background(let g, _), .freezing(let g, _, _): return g
        default: return nil
        }
    }
}

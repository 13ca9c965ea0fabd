/// A part of the daemon's loop with a deadline of its own: the loop sleeps until the
/// earliest of them (Daemon `nextTimeoutNanos`) and, once one is due, has the part do its
/// work (Daemon `fireDeadlines`).
protocol LoopComponent {
    /// When it next needs the loop (monotonic ns); nil: not until something happens.
    var nextDeadline: UInt64? { get }
}

extension PolicyEngine: LoopComponent {}
extension AcceptGate: LoopComponent {}
extension MetricsFile: LoopComponent {}
extension DescriptorShedding: LoopComponent {}
extension StandInDepartures: LoopComponent {}
extension AppLogRotator: LoopComponent {}
extension CgroupSweeper: LoopComponent {}

extension AppDeadlines: LoopComponent {
    var nextDeadline: UInt64? { earliest }
}

extension Optional: LoopComponent where Wrapped: LoopComponent {
    var nextDeadline: UInt64? { self?.nextDeadline }
}

/// The earliest deadline of `components`: a fold over a parameter pack, so each is read
/// through its own concrete type (no existential box, no array) on every turn of the loop.
func earliestDeadline<each C: LoopComponent>(_ components: repeat each C) -> UInt64? {
    var next: UInt64?
    for component in repeat each components { next = next.earlier(component.nextDeadline) }
    return next
}

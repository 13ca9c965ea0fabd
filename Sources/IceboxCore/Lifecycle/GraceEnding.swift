/// How an app's grace ended and its freeze began, as the lifecycle decides it. The raw value is
/// what the freeze event's `reason` says on the wire and in `events.jsonl` (docs/protocol.md),
/// unchanged since the field was added; ``SuspendResult/GraceEnd`` is read back from it.
package enum GraceEnding: String, Sendable, Equatable, CaseIterable {
    /// The app sent READY=1: it cut its grace short.
    case ready = "READY=1"
    /// The grace ran out (the app's, the request's, or the policy's cut).
    case expired
    /// A grace of zero: frozen at once, with no grace at all.
    case zero = "grace 0"
}

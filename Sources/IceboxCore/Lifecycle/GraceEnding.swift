/// How the grace ended and the freeze began. The raw value is the freeze event's `reason`
/// (docs/protocol.md, `events.jsonl`), so it may not change: ``SuspendResult/GraceEnd`` and old
/// logs are read back from it.
package enum GraceEnding: String, Sendable, Equatable, CaseIterable {
    /// The app sent READY=1: it cut its grace short.
    case ready = "READY=1"
    /// The grace ran out (the app's, the request's, or the policy's cut).
    case expired
    /// A grace of zero: frozen at once, with no grace at all.
    case zero = "grace 0"
}

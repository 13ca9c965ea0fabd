import IceboxSystem

/// The background notice a suspend gave the app, as the lifecycle decides it. `reason` is what the
/// notice event's `reason` says on the wire (docs/protocol.md): the signal's name, "none" or
/// "no-handler"; ``SuspendResult/Notice`` is read back from it.
package enum NoticeSent: Sendable, Equatable {
    /// This signal was sent; `why` that one (for the line).
    case signal(Int32, why: String)
    /// None: `--background-signal none`.
    case disabled
    /// None: the app has no handler for SIGUSR1 (`--background-signal auto`).
    case noHandler

    package var reason: String {
        switch self {
        case .signal(let sig, _): return Signals.name(of: sig)
        case .disabled: return "none"
        case .noHandler: return "no-handler"
        }
    }
}

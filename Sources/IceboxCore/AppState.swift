/// The lifecycle states. launching is iOS's Inactive (until ready); exited, terminated and
/// evicted are Not Running, kept apart so a user sees why.
public enum AppState: String, Codable, Sendable, CaseIterable {
    case launching, active, background, suspended, exited, terminated, evicted

    public var isEnded: Bool { self == .exited || self == .terminated || self == .evicted }
}

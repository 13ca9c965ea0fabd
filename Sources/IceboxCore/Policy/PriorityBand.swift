/// An app's priority under memory pressure, in jetsam-style bands: the policy evicts the
/// lowest band first (oldest suspended first within a band); a critical app is never evicted.
public enum PriorityBand: String, Codable, Sendable, CaseIterable, Comparable {
    /// Evicted first.
    case low
    /// The default.
    case normal
    /// Evicted only when no low or normal app is left.
    case high
    /// Never evicted.
    case critical

    /// Lower bands come first: `low < normal < high < critical`.
    public static func < (a: PriorityBand, b: PriorityBand) -> Bool { allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)! }
}

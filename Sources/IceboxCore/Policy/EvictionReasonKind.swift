extension EvictionReason {
    /// The reason as one fixed word, without its figures: a metrics label
    /// (`icebox_evictions_total{reason}`) and the `evictedFor` field of the event that records a
    /// policy eviction done, so neither has to read the human text.
    package enum Kind: String, Codable, Sendable, CaseIterable {
        case pressure, budget
        case maxSuspended = "max_suspended"
    }

    package var kind: Kind {
        switch self {
        case .pressure: return .pressure
        case .budget: return .budget
        case .tooManySuspended: return .maxSuspended
        }
    }
}

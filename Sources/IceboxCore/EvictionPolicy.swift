import IceboxSystem

/// jetsam-style priority bands: low goes first, critical is never evicted.
public enum PriorityBand: String, Codable, Sendable, CaseIterable, Comparable {
    case low, normal, high, critical

    var rank: Int { PriorityBand.allCases.firstIndex(of: self)! }
    public static func < (a: PriorityBand, b: PriorityBand) -> Bool { a.rank < b.rank }
}

/// When the daemon evicts apps, and how. Every trigger is optional; they combine. Set on
/// `icebox daemon`, changed on a running one with `icebox policy set`, kept in the state
/// directory (policy.json) so a daemon started on demand applies the last one.
public struct EvictionPolicy: Codable, Sendable, Equatable {
    public var memoryBudgetBytes: UInt64?  // the apps together may use at most this
    public var pressure: String?  // a PSI trigger, "some 150ms/2s"
    public var pressureScope = "system"  // system: /proc/pressure/memory; apps: the apps' parent cgroup
    public var maxSuspended: Int?  // as Android caps its cached apps
    public var evictionGraceNanos: UInt64 = 1_000_000_000  // notice and grace left to a victim not yet suspended
    public var protectActive = true  // never evict an active app
    public var onLockContention = "thaw"  // thaw or evict a frozen app that holds a lock others wait on
    public var compactAfterNanos: UInt64?  // compact suspended apps this long after freezing
    public var compactMode = "pageout"  // pageout (reclaim now) or cold (reclaim under pressure)

    public init() {}

    /// The policy saved at `path`, or the defaults if there is none (or it cannot be read).
    public static func load(from path: String) -> EvictionPolicy {
        (try? FileIO.read(path)).flatMap { JSONLines.decode(EvictionPolicy.self, $0) } ?? EvictionPolicy()
    }

    /// The settings by their option names, as `icebox daemon` and `icebox policy set` take them.
    public static let keys = [
        "memory-budget", "pressure", "pressure-scope", "max-suspended", "eviction-grace", "protect-active",
        "on-lock-contention", "compact-after", "compact-mode",
    ]

    /// Changes one setting from its text; "none" clears an optional one.
    public mutating func set(_ key: String, _ value: String) throws(IceboxError) {
        func bad(_ what: String) -> IceboxError { IceboxError(.usage, "invalid --\(key) '\(value)'", hint: what) }
        let none = value == "none" || value == "off"
        switch key {
        case "memory-budget":
            if none { memoryBudgetBytes = nil; return }
            guard let bytes = SizeText.parse(value), bytes > 0 else { throw bad("give a size like 2G, 512MiB or 100M, or none") }
            memoryBudgetBytes = bytes
        case "pressure":
            if none { pressure = nil; return }
            // "default" is a trigger this host accepts (a 2 s window needs no CAP_SYS_RESOURCE).
            pressure = try PressureSpec.parse(value == "default" ? PressureSpec.defaultText : value).description
        case "pressure-scope":
            guard value == "system" || value == "apps" else {
                throw bad("use system (/proc/pressure/memory) or apps (the apps' parent cgroup)")
            }
            pressureScope = value
        case "max-suspended":
            if none { maxSuspended = nil; return }
            guard let n = Int(value), n >= 0 else { throw bad("give a whole number, or none") }
            maxSuspended = n
        case "eviction-grace":
            guard let d = DurationText.parse(value) else { throw bad("give a duration like 1s or 500ms") }
            evictionGraceNanos = d
        case "protect-active":
            guard ["yes", "no", "true", "false"].contains(value) else { throw bad("use yes or no") }
            protectActive = value == "yes" || value == "true"
        case "on-lock-contention":
            guard value == "thaw" || value == "evict" else { throw bad("use thaw or evict") }
            onLockContention = value
        case "compact-after":
            if none { compactAfterNanos = nil; return }
            guard let d = DurationText.parse(value) else { throw bad("give a duration like 10s, or none") }
            compactAfterNanos = d
        case "compact-mode":
            guard value == "pageout" || value == "cold" else { throw bad("use pageout (reclaim now) or cold (reclaim under pressure)") }
            compactMode = value
        default:
            throw IceboxError(.usage, "unknown policy setting '\(key)'", hint: "settings: " + Self.keys.joined(separator: ", "))
        }
    }

    public var hasTrigger: Bool { memoryBudgetBytes != nil || pressure != nil || maxSuspended != nil }

    /// One line a setting, for `icebox policy` and `icebox doctor`.
    public var lines: [String] {
        [
            "memory budget      " + (memoryBudgetBytes.map(SizeText.format) ?? "none"),
            "pressure trigger   "
                + (pressure.map { "\($0) on \(pressureScope == "apps" ? "the apps' cgroup" : "/proc/pressure/memory")" } ?? "none"),
            "max suspended      " + (maxSuspended.map(String.init) ?? "none"),
            "eviction grace     " + DurationText.format(evictionGraceNanos),
            "protect active     " + (protectActive ? "yes" : "no"),
            "on lock contention " + onLockContention,
            "compact after      " + (compactAfterNanos.map { "\(DurationText.format($0)) (\(compactMode))" } ?? "never"),
        ]
    }
}

/// One app as the eviction order sees it.
public struct EvictionCandidate: Sendable, Equatable {
    public var name: String
    public var band: PriorityBand
    public var state: AppState
    public var sinceNanos: UInt64  // monotonic time it entered its state

    public init(name: String, band: PriorityBand, state: AppState, sinceNanos: UInt64) {
        self.name = name
        self.band = band
        self.state = state
        self.sinceNanos = sinceNanos
    }
}

public enum EvictionOrder {
    /// The order in which apps go, as iOS does it: band first (low, normal, high; critical
    /// never), then state (suspended, background, inactive/launching, active — the active app
    /// never while it is protected), then age in that state, the longest first.
    public static func order(_ candidates: [EvictionCandidate], protectActive: Bool) -> [EvictionCandidate] {
        func stateRank(_ s: AppState) -> Int? {
            switch s {
            case .suspended: return 0
            case .background: return 1
            case .launching: return 2
            case .active: return protectActive ? nil : 3
            default: return nil
            }
        }
        return candidates.filter { $0.band != .critical && stateRank($0.state) != nil }.sorted { a, b in
            if a.band != b.band { return a.band < b.band }
            let ra = stateRank(a.state)!, rb = stateRank(b.state)!
            if ra != rb { return ra < rb }
            if a.sinceNanos != b.sinceNanos { return a.sinceNanos < b.sinceNanos }
            return a.name < b.name
        }
    }
}

extension SizeText {
    /// "2G", "512MiB", "100M", "1.5GiB", "4096" (bytes). K, M, G and T are powers of 1024, as
    /// in systemd's memory settings; a trailing "B" or "iB" is allowed.
    public static func parse(_ text: String) -> UInt64? {
        var t = Substring(text.trimmingCharacters(in: " "))
        if t.hasSuffix("iB") { t = t.dropLast(2) } else if t.hasSuffix("B") { t = t.dropLast() }
        let units: [Character: Double] = ["K": 1024, "M": 1024 * 1024, "G": 1024 * 1024 * 1024, "T": 1024 * 1024 * 1024 * 1024]
        var factor = 1.0
        if let last = t.last?.uppercased().first, let f = units[last] {
            factor = f
            t = t.dropLast()
        }
        guard let value = Double(t), value >= 0, value.isFinite else { return nil }
        let bytes = value * factor
        return bytes < 1.8e19 ? UInt64(bytes) : nil
    }
}

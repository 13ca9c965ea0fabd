import Glibc
import IceboxSystem

/// `--pressure-scope`: whose PSI the trigger watches.
package enum PressureScope: String, Codable, Sendable, CaseIterable {
    case system  // /proc/pressure/memory
    case apps  // the apps' parent cgroup's memory.pressure
}

/// `--on-lock-contention`: what to do with a frozen app that holds a file lock others wait on.
package enum LockContentionAction: String, Codable, Sendable, CaseIterable {
    case thaw, evict
}

/// One change to the policy, typed: what `icebox daemon` and `icebox policy set` send. Parsed from
/// the command line's text in one place (`parse`), so a mistake exits 64 before anything is sent.
package enum PolicySetting: Codable, Sendable, Equatable {
    case memoryBudget(UInt64?)
    case pressure(String?)  // a PSI trigger already checked by PressureSpec.parse
    case pressureScope(PressureScope)
    case maxSuspended(Int?)
    case evictionGrace(UInt64)
    case protectActive(Bool)
    case onLockContention(LockContentionAction)
    case compactAfter(UInt64?)
    case compactMode(CompactionMode)
    case evictTo(EvictionTarget)
    case criuTimeout(UInt64)

    /// The settings by their option names, as `icebox daemon` and `icebox policy set` take them.
    package static let keys = [
        "memory-budget", "pressure", "pressure-scope", "max-suspended", "eviction-grace", "protect-active",
        "on-lock-contention", "compact-after", "compact-mode", "evict-to", "criu-timeout",
    ]

    /// A setting from its option name and text; "none" (or "off") clears an optional one.
    package static func parse(key: String, value: String) throws(IceboxError) -> PolicySetting {
        func bad(_ what: String) -> IceboxError { IceboxError(.usage, "invalid --\(key) '\(value)'", hint: what) }
        let none = value == "none" || value == "off"
        switch key {
        case "memory-budget":
            if none { return .memoryBudget(nil) }
            guard let bytes = SizeText.parse(value), bytes > 0 else { throw bad("give a size like 2G, 512MiB or 100M, or none") }
            return .memoryBudget(bytes)
        case "pressure":
            if none { return .pressure(nil) }
            // "default" is a trigger this host accepts (a 2 s window needs no CAP_SYS_RESOURCE).
            return .pressure(try PressureSpec.parse(value == "default" ? PressureSpec.defaultText : value).description)
        case "pressure-scope":
            guard let scope = PressureScope(rawValue: value) else {
                throw bad("use system (/proc/pressure/memory) or apps (the apps' parent cgroup)")
            }
            return .pressureScope(scope)
        case "max-suspended":
            if none { return .maxSuspended(nil) }
            guard let n = Int(value), n >= 0 else { throw bad("give a whole number, or none") }
            return .maxSuspended(n)
        case "eviction-grace":
            guard let d = DurationText.parse(value) else { throw bad("give a duration like 1s or 500ms") }
            return .evictionGrace(d)
        case "protect-active":
            guard ["yes", "no", "true", "false"].contains(value) else { throw bad("use yes or no") }
            return .protectActive(value == "yes" || value == "true")
        case "on-lock-contention":
            guard let action = LockContentionAction(rawValue: value) else { throw bad("use thaw or evict") }
            return .onLockContention(action)
        case "compact-after":
            if none { return .compactAfter(nil) }
            guard let d = DurationText.parse(value) else { throw bad("give a duration like 10s, or none") }
            return .compactAfter(d)
        case "compact-mode":
            guard let mode = CompactionMode(rawValue: value) else {
                throw bad("use pageout (reclaim now) or cold (reclaim under pressure)")
            }
            return .compactMode(mode)
        case "evict-to":
            guard let target = EvictionTarget(rawValue: value) else {
                throw bad("use kill (the default) or disk (checkpoint with CRIU; apps without --pid-namespace are killed)")
            }
            return .evictTo(target)
        case "criu-timeout":
            // Zero would kill every criu at its start: no checkpoint or restore could succeed.
            guard let d = DurationText.parse(value), d > 0 else { throw bad("give a duration above zero, like 2m or 30s") }
            return .criuTimeout(d)
        default:
            throw IceboxError(.usage, "unknown policy setting '\(key)'", hint: "settings: " + keys.joined(separator: ", "))
        }
    }

    /// "memory-budget=2.0 GiB", for the log.
    package var summary: String {
        switch self {
        case .memoryBudget(let b): return "memory-budget=" + (b.map(SizeText.format) ?? "none")
        case .pressure(let p): return "pressure=" + (p ?? "none")
        case .pressureScope(let s): return "pressure-scope=" + s.rawValue
        case .maxSuspended(let n): return "max-suspended=" + (n.map(String.init) ?? "none")
        case .evictionGrace(let d): return "eviction-grace=" + DurationText.format(d)
        case .protectActive(let b): return "protect-active=" + (b ? "yes" : "no")
        case .onLockContention(let a): return "on-lock-contention=" + a.rawValue
        case .compactAfter(let d): return "compact-after=" + (d.map(DurationText.format) ?? "none")
        case .compactMode(let m): return "compact-mode=" + m.rawValue
        case .evictTo(let t): return "evict-to=" + t.rawValue
        case .criuTimeout(let d): return "criu-timeout=" + DurationText.format(d)
        }
    }
}

/// A setting's JSON form is the policy's own member: `{"memory_budget_bytes":1073741824}`,
/// `{"pressure":null}` (cleared), `{"eviction_grace_ns":1000000000}`: one member, named and
/// valued as in the policy a `policy` request answers (`docs/protocol.md`).
extension PolicySetting {
    enum CodingKeys: String, CodingKey {
        case memoryBudgetBytes, pressure, pressureScope, maxSuspended, evictionGraceNanos, protectActive, onLockContention
        case compactAfterNanos, compactMode, evictTo, criuTimeoutNanos
    }

    package init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        guard c.allKeys.count == 1, let key = c.allKeys.first else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "a policy setting is an object with exactly one member"))
        }
        switch key {
        case .memoryBudgetBytes: self = .memoryBudget(try c.decode(UInt64?.self, forKey: key))
        case .pressure: self = .pressure(try c.decode(String?.self, forKey: key))
        case .pressureScope: self = .pressureScope(try c.decode(PressureScope.self, forKey: key))
        case .maxSuspended: self = .maxSuspended(try c.decode(Int?.self, forKey: key))
        case .evictionGraceNanos: self = .evictionGrace(try c.decode(UInt64.self, forKey: key))
        case .protectActive: self = .protectActive(try c.decode(Bool.self, forKey: key))
        case .onLockContention: self = .onLockContention(try c.decode(LockContentionAction.self, forKey: key))
        case .compactAfterNanos: self = .compactAfter(try c.decode(UInt64?.self, forKey: key))
        case .compactMode: self = .compactMode(try c.decode(CompactionMode.self, forKey: key))
        case .evictTo: self = .evictTo(try c.decode(EvictionTarget.self, forKey: key))
        case .criuTimeoutNanos: self = .criuTimeout(try c.decode(UInt64.self, forKey: key))
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .memoryBudget(let v): try c.encode(v, forKey: .memoryBudgetBytes)
        case .pressure(let v): try c.encode(v, forKey: .pressure)
        case .pressureScope(let v): try c.encode(v, forKey: .pressureScope)
        case .maxSuspended(let v): try c.encode(v, forKey: .maxSuspended)
        case .evictionGrace(let v): try c.encode(v, forKey: .evictionGraceNanos)
        case .protectActive(let v): try c.encode(v, forKey: .protectActive)
        case .onLockContention(let v): try c.encode(v, forKey: .onLockContention)
        case .compactAfter(let v): try c.encode(v, forKey: .compactAfterNanos)
        case .compactMode(let v): try c.encode(v, forKey: .compactMode)
        case .evictTo(let v): try c.encode(v, forKey: .evictTo)
        case .criuTimeout(let v): try c.encode(v, forKey: .criuTimeoutNanos)
        }
    }
}

/// When the daemon evicts apps, and how. Every trigger is optional; they combine. Set on `icebox
/// daemon`, changed on a running one with `icebox policy set`, kept in the state directory
/// (policy.json) so a daemon started on demand applies the last one.
package struct EvictionPolicy: Codable, Sendable, Equatable {
    package var memoryBudgetBytes: UInt64?  // the apps together may use at most this
    package var pressure: String?  // a PSI trigger, "some 150ms/2s"
    package var pressureScope = PressureScope.system
    package var maxSuspended: Int?  // as Android caps its cached apps
    package var evictionGraceNanos: UInt64 = 1_000_000_000  // notice and grace left to a victim not yet suspended
    package var protectActive = true  // never evict an active app
    package var onLockContention = LockContentionAction.thaw
    package var compactAfterNanos: UInt64?  // compact suspended apps this long after freezing
    package var compactMode = CompactionMode.pageout
    package var evictTo = EvictionTarget.kill  // what a victim's eviction is: a kill, or a CRIU dump when it can
    /// How long one criu run may take, a dump (with the sync of its images) or a restore,
    /// before it is killed and the checkpoint or restore fails: a few GiB written or read.
    package var criuTimeoutNanos: UInt64 = 120_000_000_000

    package init() {}

    /// The policy saved at `path`, or the defaults if there is none (or it cannot be read).
    package static func load(from path: String) -> EvictionPolicy { loadReporting(from: path).policy }

    /// The same, with what was wrong when a file is there but gives no policy (unreadable,
    /// or not a policy): the daemon says it instead of running on the defaults unseen.
    package static func loadReporting(from path: String) -> (policy: EvictionPolicy, problem: String?) {
        let text: String
        do { text = try FileIO.read(path) } catch {
            return (EvictionPolicy(), error.errno == ENOENT ? nil : error.description)
        }
        do { return (try JSONLines.decodeOrError(EvictionPolicy.self, text), nil) } catch {
            return (EvictionPolicy(), "\(path) holds no policy this icebox reads (\(error))")
        }
    }

    package mutating func apply(_ setting: PolicySetting) {
        switch setting {
        case .memoryBudget(let b): memoryBudgetBytes = b
        case .pressure(let p): pressure = p
        case .pressureScope(let s): pressureScope = s
        case .maxSuspended(let n): maxSuspended = n
        case .evictionGrace(let d): evictionGraceNanos = d
        case .protectActive(let b): protectActive = b
        case .onLockContention(let a): onLockContention = a
        case .compactAfter(let d): compactAfterNanos = d
        case .compactMode(let m): compactMode = m
        case .evictTo(let t): evictTo = t
        case .criuTimeout(let d): criuTimeoutNanos = d
        }
    }

    /// One line a setting, for `icebox policy` and `icebox doctor`.
    package var lines: [String] {
        [
            "memory budget      " + (memoryBudgetBytes.map(SizeText.format) ?? "none"),
            "pressure trigger   "
                + (pressure.map { "\($0) on \(pressureScope == .apps ? "the apps' cgroup" : "/proc/pressure/memory")" } ?? "none"),
            "max suspended      " + (maxSuspended.map(String.init) ?? "none"),
            "eviction grace     " + DurationText.format(evictionGraceNanos),
            "protect active     " + (protectActive ? "yes" : "no"),
            "on lock contention " + onLockContention.rawValue,
            "compact after      " + (compactAfterNanos.map { "\(DurationText.format($0)) (\(compactMode.rawValue))" } ?? "never"),
            "evict to           " + evictTo.rawValue,
            "criu timeout       " + DurationText.format(criuTimeoutNanos),
        ]
    }
}

/// Decoding as synthesized, but `evict_to` and `criu_timeout_ns` may be missing (a policy.json or
/// reply from before they existed): such a policy kills its victims and gives criu 2 minutes.
extension EvictionPolicy {
    package init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        memoryBudgetBytes = try c.decodeIfPresent(UInt64.self, forKey: .memoryBudgetBytes)
        pressure = try c.decodeIfPresent(String.self, forKey: .pressure)
        pressureScope = try c.decode(PressureScope.self, forKey: .pressureScope)
        maxSuspended = try c.decodeIfPresent(Int.self, forKey: .maxSuspended)
        evictionGraceNanos = try c.decode(UInt64.self, forKey: .evictionGraceNanos)
        protectActive = try c.decode(Bool.self, forKey: .protectActive)
        onLockContention = try c.decode(LockContentionAction.self, forKey: .onLockContention)
        compactAfterNanos = try c.decodeIfPresent(UInt64.self, forKey: .compactAfterNanos)
        compactMode = try c.decode(CompactionMode.self, forKey: .compactMode)
        evictTo = try c.decodeIfPresent(EvictionTarget.self, forKey: .evictTo) ?? .kill
        criuTimeoutNanos = try c.decodeIfPresent(UInt64.self, forKey: .criuTimeoutNanos) ?? criuTimeoutNanos
    }
}

/// One app as the eviction order sees it.
package struct EvictionCandidate: Sendable, Equatable {
    package var name: String
    package var band: PriorityBand
    package var state: AppState
    package var sinceNanos: UInt64  // monotonic time it entered its state
}

package enum EvictionOrder {
    /// The order in which apps go, as iOS does it: band first (low, normal, high; critical
    /// never), then state (suspended, background, inactive/launching, active — the active app
    /// never while it is protected), then age in that state, the longest first.
    package static func order(_ candidates: [EvictionCandidate], protectActive: Bool) -> [EvictionCandidate] {
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
    package static func parse(_ text: String) -> UInt64? {
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

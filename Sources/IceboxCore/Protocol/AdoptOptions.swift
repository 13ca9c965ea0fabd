/// What `icebox adopt` takes over: a running process tree, or every process of a cgroup.
public enum AdoptSource: Codable, Sendable, Equatable, CustomStringConvertible {
    /// The process and all its descendants (`--pid PID`). It is the app's main process.
    case pid(Int32)
    /// Every process of a cgroup directory and its sub-cgroups (`--cgroup PATH`, under a
    /// cgroup mount). The app's main process is one whose parent is outside them (the oldest if several).
    case cgroup(String)

    public var description: String {
        switch self {
        case .pid(let pid): return "pid \(pid)"
        case .cgroup(let path): return "cgroup \(path)"
        }
    }
}

/// `{"pid":1234}` or `{"cgroup":"/sys/fs/cgroup/build"}`: one member, its value plain
/// (docs/protocol.md).
extension AdoptSource {
    enum CodingKeys: String, CodingKey { case pid, cgroup }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        switch (try c.decodeIfPresent(Int32.self, forKey: .pid), try c.decodeIfPresent(String.self, forKey: .cgroup)) {
        case (let pid?, nil): self = .pid(pid)
        case (nil, let path?): self = .cgroup(path)
        default:
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "give one of pid and cgroup"))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .pid(let pid): try c.encode(pid, forKey: .pid)
        case .cgroup(let path): try c.encode(path, forKey: .cgroup)
        }
    }
}

/// What `adopt` asks for: the app's name, where its processes are, and the launch options
/// that apply to a process icebox did not start (the notice, the grace, the priority, the
/// backend). The rest of ``LaunchOptions`` is read from the main process, for `relaunch`.
///
/// ```swift
/// var options = AdoptOptions(name: "build", source: .pid(4242))
/// options.grace = .seconds(2)
/// let app = try client.adopt(options)
/// ```
public struct AdoptOptions: Codable, Sendable, Equatable {
    /// The app's name (`icebox adopt NAME`); refused if an app of that name runs.
    public var name: String
    /// The process tree or cgroup to take over.
    public var source: AdoptSource
    /// How to freeze it (`--backend`): as for a launch; the move itself needs a cgroup.
    public var backend = BackendChoice.auto
    package var graceNanos: UInt64 = 5_000_000_000  // `grace` as the wire (grace_ns) and the engine keep it
    package var maxGraceNanos: UInt64 = 30_000_000_000  // `maxGrace`
    /// The notice (`--background-signal`): auto sends SIGUSR1 when the process catches it.
    public var backgroundSignal = NoticeSignal.auto
    /// Sent after a thaw (`--foreground-signal`), nil for none.
    public var foregroundSignal: Int32?
    /// Its eviction band (`--priority`).
    public var priority = PriorityBand.normal
    package var compactAfterNanos: UInt64?  // `compactAfter`

    /// Options with the defaults `launch` has.
    public init(name: String, source: AdoptSource) {
        self.name = name
        self.source = source
    }

    /// Only `name` and `source` are required; the rest takes its default when absent
    /// (docs/protocol.md).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(name: try c.decode(String.self, forKey: .name), source: try c.decode(AdoptSource.self, forKey: .source))
        backend = try c.decodeIfPresent(BackendChoice.self, forKey: .backend) ?? backend
        graceNanos = try c.decodeIfPresent(UInt64.self, forKey: .graceNanos) ?? graceNanos
        maxGraceNanos = try c.decodeIfPresent(UInt64.self, forKey: .maxGraceNanos) ?? maxGraceNanos
        backgroundSignal = try c.decodeIfPresent(NoticeSignal.self, forKey: .backgroundSignal) ?? backgroundSignal
        foregroundSignal = try c.decodeIfPresent(Int32.self, forKey: .foregroundSignal)
        priority = try c.decodeIfPresent(PriorityBand.self, forKey: .priority) ?? priority
        compactAfterNanos = try c.decodeIfPresent(UInt64.self, forKey: .compactAfterNanos)
    }

    /// The same settings taken from launch options (`icebox adopt` parses its options as
    /// `launch` does), for `source`.
    public init(_ launch: LaunchOptions, source: AdoptSource) {
        self.init(name: launch.name, source: source)
        backend = launch.backend
        graceNanos = launch.graceNanos
        maxGraceNanos = launch.maxGraceNanos
        backgroundSignal = launch.backgroundSignal
        foregroundSignal = launch.foregroundSignal
        priority = launch.priority
        compactAfterNanos = launch.compactAfterNanos
    }

    /// The launch options the adopted app is recorded with: these settings, and the command
    /// line, working directory and environment read from its main process (for `relaunch`).
    func launchOptions(command: [String], workingDirectory: String?, environment: [String]) -> LaunchOptions {
        var o = LaunchOptions(name: name, command: command)
        o.backend = backend
        o.graceNanos = graceNanos
        o.maxGraceNanos = max(maxGraceNanos, graceNanos)
        o.backgroundSignal = backgroundSignal
        o.foregroundSignal = foregroundSignal
        o.priority = priority
        o.compactAfterNanos = compactAfterNanos
        o.workingDirectory = workingDirectory
        o.environment = environment
        return o
    }
}

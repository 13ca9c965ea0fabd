import IceboxSystem

/// When a launched app counts as ready (Inactive → Active).
public enum ReadyMode: Codable, Sendable, Equatable, CustomStringConvertible {
    /// Ready once `execve` succeeded.
    case exec
    /// Ready when the app sends `READY=1` to its `NOTIFY_SOCKET` (sd_notify).
    case notify
    /// Ready when this port accepts a connection on 127.0.0.1.
    case tcp(UInt16)
    /// Ready when this probe (run by `/bin/sh -c`) exits 0.
    case command(String)
    /// Ready when a GET of this `http://` URL answers 2xx.
    case http(String)

    package static func parse(_ text: String) -> ReadyMode? {
        if text == "exec" { return .exec }
        if text == "notify" { return .notify }
        if text.hasPrefix("tcp:"), let port = UInt16(text.dropFirst(4)), port > 0 { return .tcp(port) }
        if text.hasPrefix("cmd:"), text.count > 4 { return .command(String(text.dropFirst(4))) }
        if text.hasPrefix("http:"), HTTPURL(String(text.dropFirst(5))) != nil { return .http(String(text.dropFirst(5))) }
        return nil
    }

    /// Why `parse` refused an http: URL that cannot be probed (a host name, https, a bad port).
    package static func parseProblem(_ text: String) -> String? {
        guard text.hasPrefix("http:") else { return nil }
        do {
            _ = try HTTPURL(parsing: String(text.dropFirst(5)))
            return nil
        } catch {
            return error.description
        }
    }

    public var description: String {
        switch self {
        case .exec: return "exec"
        case .notify: return "notify"
        case .tcp(let p): return "tcp:\(p)"
        case .command(let c): return "cmd:\(c)"
        case .http(let url): return "http:\(url)"
        }
    }

    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let mode = ReadyMode.parse(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "bad ready mode \(text)"))
        }
        self = mode
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }
}

/// What `run` and `launch` ask for: sent to the daemon as JSON, kept in the registry so an
/// ended app can be started again the same way.
public struct LaunchOptions: Codable, Sendable, Equatable {
    /// The app's name: letters, digits, `.`, `_` and `-` (``IceboxError/Reason/badRequest``
    /// otherwise), unique among the daemon's apps.
    public var name: String
    package var nameIsDefault = false
    /// The command line; a relative command is found on the `PATH` of ``environment``.
    public var command: [String]
    /// How it is frozen: ``BackendChoice/auto`` picks the best the host offers.
    public var backend = BackendChoice.auto
    package var graceNanos: UInt64 = 5_000_000_000
    package var maxGraceNanos: UInt64 = 30_000_000_000
    /// The notice it gets when it goes to the background (didEnterBackground).
    public var backgroundSignal = NoticeSignal.auto
    /// A signal it gets once thawed (willEnterForeground); nil: none.
    public var foregroundSignal: Int32?
    /// When it counts as ready: ``LaunchedApp`` is returned then.
    public var ready = ReadyMode.exec
    package var readyTimeoutNanos: UInt64 = 30_000_000_000
    /// Its working directory; nil: the caller's.
    public var workingDirectory: String?
    /// Its environment, `KEY=VALUE`; empty: the caller's (so `PATH` finds `sleep`).
    public var environment: [String] = []
    /// Variables set on top of ``environment``, `KEY=VALUE` (`--env`).
    public var extraEnvironment: [String] = []
    /// Its band under memory pressure.
    public var priority = PriorityBand.normal
    package var compactAfterNanos: UInt64?  // compact this long after each freeze (else the daemon's policy)
    package var attached = false  // run (the client's stdio) or launch (a log file)
    package var watchdogNanos: UInt64?  // `watchdog`
    /// What happens when it misses its watchdog (``watchdog``); nil: ``WatchdogAction/log``.
    public var watchdogAction: WatchdogAction?
    /// `--start-limit-burst`: `--watchdog-action restart` launches the app again at most this
    /// many times within ``startLimitInterval`` (systemd's StartLimitBurst=, with its
    /// defaults); past that it stays ended. nil: the default.
    public var startLimitBurst: Int?
    package var startLimitIntervalNanos: UInt64?
    /// `--user`: the uid, gid and groups the app runs as, with no capability and
    /// no_new_privs (nil: as the daemon's user).
    public var runAs: RunAs?
    /// `--pid-namespace`: the app's tree gets a PID namespace of its own, under a tiny init
    /// that is pid 1 there (its pids are then free when CRIU restores it). Needs a daemon with
    /// CAP_SYS_ADMIN (``IceboxError/Reason/permissionDenied`` otherwise).
    public var pidNamespace = false
    /// `--evict-to`: what the memory policy does to this app when it is its victim, over the
    /// policy's own `--evict-to` (nil: the policy's). `disk` needs ``pidNamespace``.
    package var evictTo: EvictionTarget?

    /// The least watchdog interval: `--watchdog` refuses less, and an app's WATCHDOG_USEC=
    /// below it is raised to it (1 µs fired the watchdog on every turn of the loop).
    package static let leastWatchdogNanos: UInt64 = 100_000_000
    /// Restarts allowed within the start limit's interval when ``startLimitBurst`` is nil.
    public static let defaultStartLimitBurst = 5
    package static let defaultStartLimitIntervalNanos: UInt64 = 10_000_000_000
    /// The most `--start-limit-burst` takes (the registry keeps one time per restart).
    public static let maxStartLimitBurst = 1000

    /// The start limit in force: restarts allowed within the interval (nil: no limit).
    package var startLimit: (burst: Int, intervalNanos: UInt64)? {
        let interval = startLimitIntervalNanos ?? Self.defaultStartLimitIntervalNanos
        guard interval > 0 else { return nil }
        return (min(max(startLimitBurst ?? Self.defaultStartLimitBurst, 1), Self.maxStartLimitBurst), interval)
    }

    /// A launch of `command` as `name`, every other option at its default.
    public init(name: String, command: [String]) {
        self.name = name
        self.command = command
    }
}

extension LaunchOptions: JSONRecord {
    /// Only `name` and `command` are required; every other member takes its default when
    /// absent (docs/protocol.md).
    public init(from decoder: any Decoder) throws { try self.init(fieldsFrom: decoder) }

    /// Encodes every member under its Swift name (as a synthesized conformance would).
    public func encode(to encoder: any Encoder) throws { try encodeFields(to: encoder) }

    /// Every member, in key order: the registry's form, the protocol's and Codable's.
    package func visitFields<V: JSONFieldVisitor>(_ v: inout V) where V.Root == LaunchOptions {
        v.defaulted("attached", attached) { $0.attached = $1 }
        v.defaulted("backend", backend) { $0.backend = $1 }
        v.defaulted("background_signal", backgroundSignal) { $0.backgroundSignal = $1 }
        v.required("command", command) { $0.command = $1 }
        v.optional("compact_after_ns", compactAfterNanos) { $0.compactAfterNanos = $1 }
        v.defaulted("environment", environment) { $0.environment = $1 }
        v.optional("evict_to", evictTo) { $0.evictTo = $1 }
        v.defaulted("extra_environment", extraEnvironment) { $0.extraEnvironment = $1 }
        v.optional("foreground_signal", foregroundSignal) { $0.foregroundSignal = $1 }
        v.defaulted("grace_ns", graceNanos) { $0.graceNanos = $1 }
        v.defaulted("max_grace_ns", maxGraceNanos) { $0.maxGraceNanos = $1 }
        v.required("name", name) { $0.name = $1 }
        v.defaulted("name_is_default", nameIsDefault) { $0.nameIsDefault = $1 }
        v.defaulted("pid_namespace", pidNamespace) { $0.pidNamespace = $1 }
        v.defaulted("priority", priority) { $0.priority = $1 }
        v.defaulted("ready", ready) { $0.ready = $1 }
        v.defaulted("ready_timeout_ns", readyTimeoutNanos) { $0.readyTimeoutNanos = $1 }
        v.optional("run_as", runAs) { $0.runAs = $1 }
        v.optional("start_limit_burst", startLimitBurst) { $0.startLimitBurst = $1 }
        v.optional("start_limit_interval_ns", startLimitIntervalNanos) { $0.startLimitIntervalNanos = $1 }
        v.optional("watchdog_action", watchdogAction) { $0.watchdogAction = $1 }
        v.optional("watchdog_ns", watchdogNanos) { $0.watchdogNanos = $1 }
        v.optional("working_directory", workingDirectory) { $0.workingDirectory = $1 }
    }

    /// Every member at its default, the name and command empty.
    package static let jsonBlank = LaunchOptions(name: "", command: [])
}

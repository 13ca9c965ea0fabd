/// One request on the control socket, answered with `ControlReply` lines: one case a command,
/// with exactly its arguments, so the daemon dispatches on a type. Its JSON form
/// (`docs/protocol.md`): `{"case":{"label":value,…}}`, every value labeled.
package enum ControlRequest: Codable, Sendable, Equatable {
    /// The protocol version this daemon speaks (``version``'s answer), raised when a request
    /// or reply changes in a way an older client would misread.
    package static let protocolVersion = 1

    case ping
    /// The protocol's version, answered as a `data` reply with `protocol_version`.
    case version
    case launch(options: LaunchOptions)
    /// `brief`: summaries (`AppSummary`) rather than whole records, for a table.
    case ps(all: Bool, brief: Bool = false)
    /// `graceNanos`: this suspend's grace instead of each app's own (`suspend --grace`).
    case suspend(names: [String], graceNanos: UInt64? = nil)
    case resume(names: [String], waitReady: Bool)
    /// Resume `name` and send the active app(s) to the background.
    case switchTo(name: String)
    case terminate(names: [String], timeoutNanos: UInt64?)
    /// `toDisk`: checkpoint each app to disk with CRIU instead of killing it (`evict
    /// --to-disk`); `to_disk` on the wire, optional, absent or false being the kill.
    case evict(names: [String], toDisk: Bool = false)
    case relaunch(name: String)
    case compact(names: [String], mode: CompactionMode?)
    case policy
    case setPolicy(settings: [PolicySetting])
    case stop(terminateApps: Bool, timeoutNanos: UInt64?)
    /// Drop ended apps' records (what `ps --all` and `relaunch` use); a running app is an error.
    case forget(names: [String])
    /// The metrics, answered as one `line` reply holding the text.
    case metrics(format: MetricsFormat)
    /// Take over a running process tree or cgroup as an app (`icebox adopt`).
    case adopt(options: AdoptOptions)
    /// Hand an app back, still running, no longer supervised (`icebox release`).
    case release(name: String)

    /// The command's name as a user types it, for messages.
    package var commandName: String {
        switch self {
        case .ping: return "ping"
        case .version: return "version"
        case .launch: return "launch"
        case .ps: return "ps"
        case .suspend: return "suspend"
        case .resume: return "resume"
        case .switchTo: return "switch"
        case .terminate: return "terminate"
        case .evict: return "evict"
        case .relaunch: return "relaunch"
        case .compact: return "compact"
        case .policy: return "policy"
        case .setPolicy: return "policy set"
        case .stop: return "daemon --stop"
        case .forget: return "forget"
        case .metrics: return "metrics"
        case .adopt: return "adopt"
        case .release: return "release"
        }
    }

    /// Every request's name as it stands on the wire (docs/protocol.md), in the document's order.
    package static let wireNames = [
        "ping", "version", "launch", "adopt", "release", "ps", "suspend", "resume", "switch_to", "terminate", "evict", "relaunch",
        "compact", "forget", "policy", "set_policy", "metrics", "stop",
    ]

    /// What to tell a client whose `line` is no request: the unknown name, or what was wrong
    /// with the request's members.
    package static func refusal(of line: String, _ error: any Error) -> IceboxError {
        let see = "see docs/protocol.md"
        guard let name = JSONLines.decode(RequestName.self, line)?.name else {
            return IceboxError(.usage, "malformed request: not a JSON object with one member, the request's name", hint: see)
        }
        guard wireNames.contains(name) else {
            return IceboxError(
                .usage, "unknown request '\(TerminalText.escaped(String(name.prefix(64))))'",
                hint: "the requests are " + wireNames.joined(separator: ", ") + "; " + see)
        }
        return IceboxError(.usage, "malformed \(name) request: \(words(for: error))", hint: see)
    }

    /// A decoding error in the protocol's terms: members by their wire names, no Swift types.
    static func words(for error: any Error) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            keys.map { $0.intValue.map { "[\($0)]" } ?? JSONKeyStyle.snake($0.stringValue) }.joined(separator: ".")
        }
        guard let error = error as? DecodingError else { return "\(error)" }
        switch error {
        case .keyNotFound(let key, let c):
            return "no \(path(c.codingPath + [key])) member"
        case .valueNotFound(_, let c):
            return "\(path(c.codingPath)) is null"
        case .typeMismatch(let type, let c):
            // JSON's names for what was expected, not Swift's.
            let text = "\(type)"
            let kind =
                type == String.self
                ? "a string"
                : type == Bool.self
                    ? "true or false" : text.hasPrefix("Array") ? "an array" : text.hasPrefix("Dictionary") ? "an object" : "a number"
            return "\(path(c.codingPath)) is not \(kind)"
        case .dataCorrupted(let c):
            return (c.codingPath.isEmpty ? "" : path(c.codingPath) + ": ") + c.debugDescription
        @unknown default:
            return "\(error)"
        }
    }

    /// The one member's name of a request object, whatever its value.
    private struct RequestName: Decodable {
        var name: String?

        init(from decoder: any Decoder) throws {
            let keys = try decoder.container(keyedBy: JSONKey.self).allKeys
            name = keys.count == 1 ? JSONKeyStyle.snake(keys[0].stringValue) : nil
        }
    }

    /// Whether the request only reads: sent twice, it has no effect the first had not, so it goes
    /// again to the next daemon when the first died before answering (ClientSession.mayResend).
    package var isReadOnly: Bool {
        switch self {
        case .ping, .version, .ps, .policy, .metrics: return true
        default: return false
        }
    }
}

/// The control socket speaks JSON lines. A client sends one request; the daemon answers with
/// any number of `line`/`event` replies and ends with `done` (or `exit` for an attached run).
public struct ControlRequest: Codable, Sendable {
    public var command: String  // launch, suspend, resume, switch, terminate, evict, ps, stop, ping
    public var names: [String] = []
    public var launch: LaunchOptions?
    public var timeoutNanos: UInt64?
    public var all = false
    public var terminateApps = false
    public var waitReady = false
    public var settings: [[String]] = []  // policy-set: [key, value] pairs, applied in order
    public var mode: String?  // compact: pageout or cold  // resume: answer after the app's READY=1 (--ready notify)

    public init(command: String, names: [String] = []) {
        self.command = command
        self.names = names
    }
}

public struct ControlReply: Codable, Sendable {
    public enum Kind: String, Codable, Sendable {
        case line  // a line of output for the user (stdout)
        case warning  // a line for stderr
        case event  // an event of the app an attached client runs
        case data  // a JSON payload (ps)
        case done  // the end: code is the exit code
        case exit  // an attached app ended: code is its status
    }

    public var kind: Kind
    public var text: String?
    public var code: Int32?
    public var event: Event?
    public var apps: [AppRecord]?
    public var policy: EvictionPolicy?

    public init(kind: Kind, text: String? = nil, code: Int32? = nil) {
        self.kind = kind
        self.text = text
        self.code = code
    }
}

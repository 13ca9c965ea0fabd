/// What the daemon answers on the control socket: any number of `line`/`warning`/`event`/
/// `data` replies, ended by `done` (or `exit` for an attached run).
public struct ControlReply: Codable, Sendable {
    public enum Kind: String, Codable, Sendable {
        case line  // a line of output for the user (stdout)
        case warning  // a line for stderr
        case event  // an event of the app an attached client runs
        case data  // a JSON payload (ps)
        case done  // the end: code is the exit code
        case exit  // an attached app ended: code is its status

        /// Written out: the synthesized one looks the text up in a static array of
        /// StaticString, whose first use cost every one-shot command the instantiation of
        /// that array's type metadata.
        public init?(rawValue: String) {
            switch rawValue {
            case "line": self = .line
            case "warning": self = .warning
            case "event": self = .event
            case "data": self = .data
            case "done": self = .done
            case "exit": self = .exit
            default: return nil
            }
        }
    }

    public var kind: Kind
    public var text: String?
    public var code: Int32?
    public var event: Event?
    public var apps: [AppRecord]?
    public var summaries: [AppSummary]?
    public var policy: EvictionPolicy?
    /// The answer to a `version` request: ``ControlRequest/protocolVersion``.
    public var protocolVersion: Int?
    /// Why a request failed, on a `done` reply whose code is not 0: the typed
    /// ``IceboxError/Reason`` in its wire form (docs/protocol.md); nil for one the code says
    /// all about. An old client ignores it.
    package var reason: IceboxError.Reason.Wire?

    public init(kind: Kind, text: String? = nil, code: Int32? = nil) {
        self.kind = kind
        self.text = text
        self.code = code
    }
}

/// What the daemon answers on the control socket: any number of `line`/`warning`/`event`/
/// `data` replies, ended by `done` (or `exit` for an attached run).
package struct ControlReply: Codable, Sendable {
    package enum Kind: String, Codable, Sendable {
        case line  // a line of output for the user (stdout)
        case warning  // a line for stderr
        case event  // an event of the app an attached client runs
        case data  // a JSON payload (ps)
        case done  // the end: code is the exit code
        case exit  // an attached app ended: code is its status

        /// Written out: the synthesized one's static array of StaticString cost every one-shot
        /// command the instantiation of its type metadata.
        package init?(rawValue: String) {
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

    package var kind: Kind
    package var text: String?
    package var code: Int32?
    package var event: Event?
    package var apps: [AppRecord]?
    package var summaries: [AppSummary]?
    package var policy: EvictionPolicy?
    /// The answer to a `version` request: ``ControlRequest/protocolVersion``.
    package var protocolVersion: Int?
    /// Why a request failed, on a `done` reply whose code is not 0: the typed
    /// ``IceboxError/Reason``'s wire form; nil where the code says it all.
    package var reason: IceboxError.Reason.Wire?

    package init(kind: Kind, text: String? = nil, code: Int32? = nil) {
        self.kind = kind
        self.text = text
        self.code = code
    }
}

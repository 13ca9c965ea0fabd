import IceboxCore
import IceboxSystem

/// A command's client of the daemon: the library's ``IceboxClient`` (its `ClientSession`
/// connects, checks trust, rides over a restart, resends, keeps deadlines), except that it
/// starts a daemon when none runs (unless told not to) and prints the daemon's lines as they come.
struct DaemonClient {
    var session: ClientSession

    /// `environment` looks up one variable (this process's: `ProcessEnvironment.value`).
    /// `readsLineEvents`: a line's event is decoded too (the benchmark reads the daemon's own
    /// figures in it); a command that prints the lines passes over it.
    init(environment: (String) -> String?, autostartFlagOff: Bool, cgroupRoot: String?, readsLineEvents: Bool = false) {
        var client = IceboxClient(paths: IceboxPaths.fromEnvironment(environment))
        let autostart = !autostartFlagOff && environment("ICEBOX_NO_AUTOSTART").map { $0.isEmpty || $0 == "0" } ?? true
        if autostart {
            let root = cgroupRoot ?? environment("ICEBOX_CGROUP_ROOT").flatMap { $0.isEmpty ? nil : $0 }
            client.autostart = DaemonAutostart(cgroupRoot: root)
        }
        client.readsLineEvents = readsLineEvents
        session = client.session()
    }

    var paths: IceboxPaths { session.paths }

    /// The deadline for the replies to `request`, from now: an hour beyond the time-outs it
    /// carries. Generous (an app's grace can be long), but a hung daemon still ends the wait.
    static func deadline(for request: ControlRequest) -> UInt64 {
        DaemonConnection.deadline(for: request, base: 3_600_000_000_000)
    }

    /// Sends a request and prints the replies until `done`. Returns the exit code.
    mutating func perform(
        _ request: ControlRequest, onData: (([AppRecord]) -> Void)? = nil, onPolicy: ((EvictionPolicy) -> Void)? = nil,
        onSummaries: (([AppSummary]) -> Void)? = nil, rawApps: ((String) -> Void)? = nil
    ) throws(IceboxError) -> Int32 {
        var reason: IceboxError.Reason.Wire?
        return try session.perform(request, until: Self.deadline(for: request), reason: &reason, rawApps: rawApps) { reply in
            switch reply.kind {
            // The daemon's lines may quote what an app or another user supplied.
            case .line: if let t = reply.text { Output.out(TerminalText.escaped(t, keepingLayout: true)) }
            case .warning: if let t = reply.text { Output.err(TerminalText.escaped(t, keepingLayout: true)) }
            case .event: if let e = reply.event { Output.err(e.humanLine) }
            case .data:
                if let policy = reply.policy {
                    onPolicy?(policy)
                } else if let summaries = reply.summaries {
                    onSummaries?(summaries)
                } else {
                    onData?(reply.apps ?? [])
                }
            case .done, .exit: break
            }
        }
    }
}

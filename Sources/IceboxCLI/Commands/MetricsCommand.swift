import Glibc
import IceboxCore
import IceboxSystem

/// icebox metrics: the running daemon's metrics in the Prometheus text format.
enum MetricsCommand: IceboxCommand {
    static let name = "metrics"
    static let spec = CommandSpec(
        name: name, usage: "icebox metrics [--openmetrics]",
        summary: "the daemon's metrics in the Prometheus text format (apps by state, memory, latency histograms, evictions)",
        options: [
            OptionSpec(name: "openmetrics", value: nil, help: "the OpenMetrics 1.0 text format (ends with # EOF)")
        ],
        details: """
            Asks the running daemon and never starts one: a daemon started to answer would have
            counted nothing. Without a daemon it exits 69. For node_exporter's textfile
            collector, run the daemon with --metrics-file instead.
            """,
        operands: .nothing)

    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        // Through DaemonClient for its checks (a socket, not a link; this user's daemon and
        // directories), but never starting a daemon (see the details above why).
        var client = DaemonClient(environment: ProcessEnvironment.value, autostartFlagOff: true, cgroupRoot: nil)
        client.session.noDaemonHint = "icebox metrics never starts one; start it with 'icebox daemon' or 'icebox launch'"
        let request = ControlRequest.metrics(format: args.flag("openmetrics") ? .openMetrics : .prometheus)
        let connection = try client.session.connect()
        try connection.send(request)
        do {
            return try connection.replies(until: DaemonClient.deadline(for: request), what: request.commandName) { reply in
                switch reply.kind {
                case .line: if let text = reply.text { Output.out(text) }
                case .warning: if let text = reply.text { Output.err(text) }
                default: break
                }
            }
        } catch {
            throw IceboxError(error.reason, error.message, hint: error.hint ?? "see \(client.paths.daemonLog)")
        }
    }
}

import Glibc
import IceboxCore
import IceboxSystem

/// icebox metrics: the running daemon's metrics in the Prometheus text format.
enum MetricsCommand: IceboxCommand {
    static let spec = CommandSpec(
        name: "metrics", usage: "icebox metrics [--openmetrics]",
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
        let paths = IceboxPaths.fromEnvironment(ProcessEnvironment.dictionary)
        let request = ControlRequest.metrics(format: args.flag("openmetrics") ? .openMetrics : .prometheus)
        let connection: DaemonConnection
        do { connection = try DaemonConnection(socket: paths.controlSocket) } catch {
            let noDaemon = error.errno == ENOENT || error.errno == ECONNREFUSED
            throw IceboxError(
                error.isPermissionDenied ? .permission : .unavailable,
                noDaemon ? "no icebox daemon is running for \(paths.runtimeDir)" : "cannot reach the icebox daemon: \(error)",
                hint: noDaemon
                    ? "icebox metrics never starts one; start it with 'icebox daemon' or 'icebox launch'"
                    : "set ICEBOX_RUNTIME_DIR to a directory of your own")
        }
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
            throw IceboxError(error.code, error.message, hint: error.hint ?? "see \(paths.daemonLog)")
        }
    }
}

import Glibc
import IceboxCore
import IceboxSystem

/// `icebox daemon --metrics-file PATH` (or ICEBOX_METRICS_FILE): where the daemon keeps its
/// metrics for node_exporter's textfile collector.
enum MetricsFileOption {
    static let option = OptionSpec(
        name: "metrics-file", value: "PATH",
        help: "keep PATH (*.prom) fresh with the metrics, for node_exporter's textfile collector (or ICEBOX_METRICS_FILE)")

    /// The absolute path from the option (relative to the working directory) or the
    /// environment (which must be absolute: a daemon started on demand works in /). The
    /// directory must exist, since the file is written there through a temporary file.
    static func path(_ args: ParsedArguments, environment: [String: String]) throws(IceboxError) -> String? {
        var path: String
        if let given = args.value("metrics-file") {
            path = given
            if !path.hasPrefix("/") {
                guard let cwd = ProcessEnvironment.workingDirectory else {
                    throw IceboxError(.usage, "--metrics-file \(given): the working directory is unknown; give an absolute path")
                }
                path = cwd + "/" + path
            }
        } else if let given = environment["ICEBOX_METRICS_FILE"], !given.isEmpty {
            guard given.hasPrefix("/") else { throw IceboxError(.usage, "ICEBOX_METRICS_FILE=\(given) must be an absolute path") }
            path = given
        } else {
            return nil
        }
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        guard FileIO.isDirectory(directory.isEmpty ? "/" : directory) else {
            throw IceboxError(.usage, "metrics file \(path): no directory \(directory.isEmpty ? "/" : directory)")
        }
        return path
    }

    /// For a daemon started in the background: it gets the path through its environment.
    static func pass(_ path: String?) {
        if let path { setenv("ICEBOX_METRICS_FILE", path, 1) }
    }

    /// A daemon already runs: it keeps the metrics file it was started with (if any).
    static func warnIfIgnored(_ args: ParsedArguments) {
        guard let given = args.value("metrics-file") else { return }
        Output.err("icebox: --metrics-file \(given) not applied: it is for a daemon this command starts (stop the running one first)")
    }
}

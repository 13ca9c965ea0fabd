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
    /// environment (which must be absolute: a daemon started on demand works in /). Its
    /// directory must exist (the file is written through a temporary file there) and is
    /// resolved now, following a link the administrator chose once; the daemon then never
    /// opens it through a link. A directory other users can write is warned about: they can
    /// replace or remove the metrics, but not make the daemon write elsewhere
    /// (`FileIO.writeAtomically` creates its temporary file exclusively, never through a link).
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
        let directory = FileIO.split(path).directory
        guard FileIO.isDirectory(directory), let resolved = FileIO.resolvingDirectory(path) else {
            throw IceboxError(
                .usage, "metrics file \(path): " + (FileIO.isDirectory(directory) ? "no file name" : "no directory \(directory)"),
                hint: "give a file in an existing directory, such as DIR/icebox.prom")
        }
        let resolvedDirectory = FileIO.split(resolved).directory
        if let warning = othersCanWrite(resolvedDirectory) { Output.warning("metrics file directory \(resolvedDirectory) \(warning)") }
        return resolved
    }

    /// Why users other than this one and root can add, replace and remove files in
    /// `directory`, or nil: group or world write permission without the sticky bit (which
    /// keeps others off files they do not own, as in /tmp), or another user's directory.
    static func othersCanWrite(_ directory: String) -> String? {
        var st = stat()
        guard stat(directory, &st) == 0 else { return nil }
        let mode = st.st_mode & 0o7777
        let octal = "0" + String(mode, radix: 8)
        if st.st_uid != geteuid() && st.st_uid != 0 {
            return "belongs to uid \(st.st_uid) (mode \(octal)): that user can replace or remove the metrics; "
                + "icebox still never writes through a link there (give a directory of the daemon's user or root to avoid this warning)"
        }
        if mode & 0o022 != 0 && mode & S_ISVTX == 0 {
            return "can be written by \(mode & 0o002 != 0 ? "every user" : "its group") (mode \(octal)): they can replace or remove "
                + "the metrics; icebox still never writes through a link there (remove the write permission, or set the sticky bit)"
        }
        return nil
    }

    /// For a daemon started in the background: it gets the path through its environment.
    static func pass(_ path: String?) {
        if let path { setenv("ICEBOX_METRICS_FILE", path, 1) }
    }
}

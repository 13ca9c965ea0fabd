import Glibc
import IceboxCore

/// `icebox daemon --log-max-size SIZE --log-keep N` (or ICEBOX_LOG_MAX_SIZE and
/// ICEBOX_LOG_KEEP, which a daemon started on demand inherits): when the event log and the
/// apps' output logs rotate.
enum LogRotationOptions {
    static let options = [
        OptionSpec(
            name: "log-max-size", value: "SIZE",
            help: "rotate the event log and each app's output log once it reaches SIZE (default 8M; 0: never) (or ICEBOX_LOG_MAX_SIZE)"),
        OptionSpec(
            name: "log-keep", value: "N", help: "keep N older generations of each log (default 4, 1 to 100) (or ICEBOX_LOG_KEEP)"),
    ]

    /// The settings from the options, else the environment, else the defaults; a bad value
    /// is a usage error naming where it came from.
    static func rotation(_ args: ParsedArguments, environment: [String: String]) throws(IceboxError) -> LogRotation {
        var rotation = LogRotation()
        if let text = args.value("log-max-size") {
            rotation.maxBytes = try LogRotation.parseMaxBytes(text, from: "--log-max-size")
        } else if let text = environment["ICEBOX_LOG_MAX_SIZE"], !text.isEmpty {
            rotation.maxBytes = try LogRotation.parseMaxBytes(text, from: "ICEBOX_LOG_MAX_SIZE")
        }
        if let text = args.value("log-keep") {
            rotation.keep = try LogRotation.parseKeep(text, from: "--log-keep")
        } else if let text = environment["ICEBOX_LOG_KEEP"], !text.isEmpty {
            rotation.keep = try LogRotation.parseKeep(text, from: "ICEBOX_LOG_KEEP")
        }
        return rotation
    }

    /// For a daemon started in the background: it gets the settings through its environment.
    static func pass(_ args: ParsedArguments) {
        if let text = args.value("log-max-size") { setenv("ICEBOX_LOG_MAX_SIZE", text, 1) }
        if let text = args.value("log-keep") { setenv("ICEBOX_LOG_KEEP", text, 1) }
    }
}

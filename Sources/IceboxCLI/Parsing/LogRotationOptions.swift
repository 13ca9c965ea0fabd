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
        OptionSpec(name: "log-keep", value: "N", help: "keep N older generations of each log (default 4, 1 to 100) (or ICEBOX_LOG_KEEP)"),
    ]

    /// The settings from the options, else the environment, else the defaults; a bad value
    /// is a usage error naming where it came from.
    static func rotation(_ args: ParsedArguments, environment: [String: String]) throws(IceboxError) -> LogRotation {
        func given(_ option: String, _ variable: String) -> (text: String, from: String)? {
            if let text = args.value(option) { return (text, "--" + option) }
            guard let text = environment[variable], !text.isEmpty else { return nil }
            return (text, variable)
        }
        var rotation = LogRotation()
        if let s = given("log-max-size", "ICEBOX_LOG_MAX_SIZE") { rotation.maxBytes = try LogRotation.parseMaxBytes(s.text, from: s.from) }
        if let k = given("log-keep", "ICEBOX_LOG_KEEP") { rotation.keep = try LogRotation.parseKeep(k.text, from: k.from) }
        return rotation
    }

    /// For a daemon started in the background: it gets the settings through its environment.
    static func pass(_ args: ParsedArguments) {
        if let text = args.value("log-max-size") { setenv("ICEBOX_LOG_MAX_SIZE", text, 1) }
        if let text = args.value("log-keep") { setenv("ICEBOX_LOG_KEEP", text, 1) }
    }
}

/// When a log is rotated and how many older generations are kept: the event log (`events.jsonl`)
/// and every app's output log (`logs/NAME.log`) follow the same setting. `icebox daemon
/// --log-max-size SIZE --log-keep N`, or ICEBOX_LOG_MAX_SIZE and ICEBOX_LOG_KEEP for a daemon
/// started on demand.
package struct LogRotation: Sendable, Equatable {
    /// A log is rotated once it has reached this size; 0: never (the log grows without bound).
    package var maxBytes: UInt64
    /// How many older generations (PATH.1 … PATH.keep) are kept beside the current file.
    package var keep: Int

    package static let defaultMaxBytes: UInt64 = 8 << 20
    package static let defaultKeep = 4
    /// Below a kilobyte a log would rotate at every second line; above 100 generations a reader
    /// opens too many files.
    package static let minBytes: UInt64 = 1024
    package static let keepRange = 1...100

    package init(maxBytes: UInt64 = defaultMaxBytes, keep: Int = defaultKeep) {
        self.maxBytes = maxBytes
        self.keep = keep
    }

    /// "8M", "512K", "1G", "65536", or 0/"none"/"off" (never rotate).
    package static func parseMaxBytes(_ text: String, from source: String) throws(IceboxError) -> UInt64 {
        if text == "none" || text == "off" { return 0 }
        guard let bytes = SizeText.parse(text), bytes == 0 || bytes >= minBytes else {
            throw IceboxError(
                .usage, "invalid \(source) '\(text)'",
                hint: "give a size of at least 1K (8M, 512K, 1G), or 0 (or none) never to rotate")
        }
        return bytes
    }

    package static func parseKeep(_ text: String, from source: String) throws(IceboxError) -> Int {
        guard let n = Int(text), keepRange.contains(n) else {
            throw IceboxError(
                .usage, "invalid \(source) '\(text)'",
                hint: "give how many older generations to keep, \(keepRange.lowerBound) to \(keepRange.upperBound)")
        }
        return n
    }
}

/// What the daemon said while it carried out a request that succeeded: the lines `icebox` prints to
/// standard output and to standard error. A failed request throws an ``IceboxError`` instead.
public struct CommandOutput: Sendable, Equatable {
    /// The daemon's lines for standard output, such as
    /// `web  background → suspended  grace ended after 728 µs (READY=1), frozen in 79.5 µs (cgroup2, 1 process)`.
    public var lines: [String]
    /// Lines for standard error, without the `icebox: ` prefix (notes on a success).
    public var warnings: [String]

    /// An output with the given lines.
    public init(lines: [String] = [], warnings: [String] = []) {
        self.lines = lines
        self.warnings = warnings
    }
}

/// What the CRIU probe (``CriuProbe``) concluded about the `criu` icebox would run: whether
/// evicting to disk can work on this host, and if not, why.
package struct CriuVerdict: Codable, Sendable, Equatable {
    package enum Outcome: String, Codable, Sendable {
        /// Found, new enough, `criu check` exits 0, and a canary was dumped and restored.
        case works
        /// No `criu` at $ICEBOX_CRIU, /usr/local/libexec/icebox/criu or on PATH.
        case notFound = "not-found"
        /// Older than this kernel needs (`CriuProbe`'s minimums), or `criu --version` printed none.
        case tooOld = "too-old"
        /// `criu check` failed (not root, a kernel without CONFIG_CHECKPOINT_RESTORE, ...).
        case checkFailed = "check-failed"
        /// The canary's dump or restore failed: what `criu check` does not catch.
        case canaryFailed = "canary-failed"
    }

    package var outcome: Outcome
    /// The binary probed (nil when none was found).
    package var path: String?
    /// Where the path came from: "ICEBOX_CRIU", "icebox's prefix" or "PATH".
    package var source: String?
    /// Its version, "4.1.1".
    package var version: String?
    /// Why it does not work (`CriuCommand.firstError`, else how criu ended); nil when it works.
    package var reason: String?
    /// The kernel release the verdict is for (uname -r).
    package var kernel: String
    /// How long `criu check`, the canary's dump and its restore took (ns), those that ran.
    package var checkNanos: UInt64?
    package var dumpNanos: UInt64?
    package var restoreNanos: UInt64?
    /// Whether this verdict was read from the cache rather than probed now (not stored).
    package var cached = false
    /// Why the verdict could not be cached (not stored), nil when it was or need not be.
    package var cacheProblem: String?

    package var works: Bool { outcome == .works }

    enum CodingKeys: String, CodingKey {
        case outcome, path, source, version, reason, kernel, checkNanos, dumpNanos, restoreNanos
    }

    /// One line for `icebox doctor`: "4.1.1 at /usr/local/libexec/icebox/criu (icebox's
    /// prefix): check 52 ms, canary dumped in 120 ms and restored in 95 ms", or why not.
    package var summary: String {
        guard let path else { return reason ?? "not found" }
        var text = (version.map { "criu \($0)" } ?? "criu") + " at \(path)" + (source.map { " (\($0))" } ?? "")
        if works {
            var times: [String] = []
            if let checkNanos { times.append("check \(DurationText.format(checkNanos))") }
            if let dumpNanos, let restoreNanos {
                times.append("canary dumped in \(DurationText.format(dumpNanos)) and restored in \(DurationText.format(restoreNanos))")
            }
            text += ": works" + (times.isEmpty ? "" : " (" + times.joined(separator: ", ") + ")")
        } else {
            text += ": " + (reason ?? outcome.rawValue)
        }
        if cached { text += "; cached for kernel \(kernel)" }
        if let cacheProblem { text += "; not cached: \(cacheProblem)" }
        return text
    }
}

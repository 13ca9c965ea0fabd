/// `--evict-to`: what the policy does to a victim. `kill` is today's eviction (the app is
/// relaunched cold, told `ICEBOX_LAUNCH_REASON=restore`); `disk` checkpoints it with CRIU when it
/// can (an app launched with `--pid-namespace`), so a resume brings the process itself back, and
/// kills the others as `kill` does.
package enum EvictionTarget: String, Codable, Sendable, CaseIterable {
    case kill, disk
}

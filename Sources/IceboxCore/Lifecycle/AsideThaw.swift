/// A thaw the app's lifecycle does not wait for: the daemon starts it, and its confirmation
/// (or failure) is only logged, saying why it ran.
package enum AsideThaw: Sendable, Equatable {
    /// A suspended app being terminated must run to act on its SIGTERM.
    case forTermination
    /// The app's main process left its cgroup: the rest of the app runs again.
    case remainder
    /// A daemon that took over completes a thaw half done (or the app frozen without a suspend).
    case afterRestart

    /// Said after "thawed in …".
    var why: String {
        switch self {
        case .forTermination: return "so it can act on SIGTERM"
        case .remainder: return "for the rest of the app (its main process left the cgroup)"
        case .afterRestart: return "after a daemon restart"
        }
    }

    /// Whether its line is the app's step from suspended to active. The one a restarted daemon
    /// completes is: a daemon killed after logging it, before its registry write, leaves the next
    /// one the line that says the step is done (EventLog.lastStep), not a thaw to complete and log
    /// again. The others thaw an app on its way out.
    var isResumeStep: Bool { self == .afterRestart }
}

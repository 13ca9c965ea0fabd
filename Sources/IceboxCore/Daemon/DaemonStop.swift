/// Why a daemon is stopping (`Daemon.stop`; nil while it serves). One value, so a daemon
/// cannot be leaving its apps without stopping, or failed without saying how it ends.
enum DaemonStop {
    /// Every app is terminated the graceful way; the loop ends once the daemon is idle
    /// (`daemon --stop --terminate-apps`).
    case endingApps
    /// The apps stay as they are, running or frozen, for the next daemon to re-adopt; the
    /// loop ends at once (`daemon --stop`, SIGTERM).
    case leavingApps
    /// The loop itself failed (its epoll_wait): it ends at once, the apps are left as for
    /// `leavingApps`, and `run` throws this once the daemon has shut down.
    case loopFailed(IceboxError)
}

/// Why a daemon is stopping (`Daemon.stop`; nil while it serves). One value, so a daemon
/// cannot be leaving its apps without stopping, or failed without saying how it ends.
enum DaemonStop {
    case endingApps  // every app terminated gracefully; ends once idle (`--terminate-apps`)
    case leavingApps  // the apps stay, for the next daemon; ends at once (`daemon --stop`, SIGTERM)
    /// The loop's epoll_wait failed: ends as `leavingApps`, and then `run` throws this.
    case loopFailed(IceboxError)
}

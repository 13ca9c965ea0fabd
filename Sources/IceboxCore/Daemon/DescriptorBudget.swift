/// How many descriptors the daemon keeps per app, so that it runs apps up to the hard limit
/// on open descriptors (20,000 here, not raisable without CAP_SYS_RESOURCE) and not to a
/// fixed fraction of it.
///
/// Every app holds its pidfd: that is how its exit is seen, and how it is signalled without
/// a pid that may have been reused. While descriptors are plenty, an app also keeps its own
/// notify socket, its cgroup.events, cgroup.freeze (or freezer.state), its v2 cgroup.procs
/// and cgroup directory, its memory counter and its main process's /proc/PID/stat open
/// (`keptPerApp` in all): a freeze, a notice or a `ps` then opens nothing. Plenty means
/// every app keeping that many would still leave half the limit free for clients, probes
/// and what an operation opens. Past that the daemon sheds: apps
/// launched from then on share its notify socket (`NotifyChannel.shared`), and every app's
/// cgroup files are opened for an operation and closed after it.
struct DescriptorBudget: Equatable {
    /// pidfd, notify socket, cgroup.events, cgroup.freeze or freezer.state, cgroup.procs,
    /// the cgroup's directory, memory counter, /proc/PID/stat.
    static let keptPerApp = 8
    /// What the daemon holds whatever its apps: listener, epoll, signalfd, locks, event log,
    /// stand-ins, kept cgroup roots, a pressure trigger.
    static let reserve = 64

    /// The soft limit on open descriptors, once raised to the hard one.
    var limit: UInt64

    /// Whether `apps` apps may each keep `keptPerApp` descriptors with `clients` connected.
    func isPlenty(apps: Int, clients: Int) -> Bool {
        let (perApp, overflow) = UInt64(max(apps, 0)).multipliedReportingOverflow(by: UInt64(Self.keptPerApp))
        if overflow { return false }
        return perApp.saturatingAdd(UInt64(max(clients, 0))).saturatingAdd(UInt64(Self.reserve)) < limit / 2
    }
}

/// How many descriptors the daemon keeps per app, so it runs apps up to the hard limit. Every
/// app holds its pidfd; while plenty (all apps keeping `keptPerApp` would leave half the limit
/// free) it keeps its files open, so a freeze or a `ps` opens nothing. Past that the daemon
/// sheds: new apps share its notify socket, and cgroup files are opened per operation.
struct DescriptorBudget: Equatable {
    /// pidfd, notify socket, cgroup.events, cgroup.freeze or freezer.state, cgroup.procs,
    /// the cgroup's directory, memory counter, /proc/PID/stat.
    static let keptPerApp = 8
    /// What the daemon holds whatever its apps: listener, epoll, signalfd, locks, event log,
    /// stand-ins, kept cgroup roots, a pressure trigger.
    static let reserve = 64

    var limit: UInt64  // the soft limit on open descriptors, once raised to the hard one

    /// Whether `apps` apps may each keep `keptPerApp` descriptors with `clients` connected.
    func isPlenty(apps: Int, clients: Int) -> Bool {
        let (perApp, overflow) = UInt64(max(apps, 0)).multipliedReportingOverflow(by: UInt64(Self.keptPerApp))
        if overflow { return false }
        return perApp.saturatingAdd(UInt64(max(clients, 0))).saturatingAdd(UInt64(Self.reserve)) < limit / 2
    }
}

/// How many descriptors the daemon keeps per app, so that it runs apps up to the hard limit
/// on open descriptors, not to a fixed fraction of it. Every app holds its pidfd; while
/// descriptors are plenty it also keeps its files open (`keptPerApp` in all), so a freeze, a
/// notice or a `ps` opens nothing. Plenty: every app keeping that many would still leave half
/// the limit free. Past that the daemon sheds: new apps share its notify socket, and every
/// app's cgroup files are opened for an operation and closed after it.
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

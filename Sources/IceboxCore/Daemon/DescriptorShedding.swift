/// What the daemon keeps open per app while descriptors are plenty, and what it shares once
/// they are not (DescriptorBudget; Daemon+Descriptors sheds, Daemon+Notify serves the shared
/// socket): how one daemon runs 10,000 apps under a hard limit of 20,000.
struct DescriptorShedding {
    /// The soft limit this process started with, given back to apps at their spawn
    /// (programs using select() rely on staying below 1024); 0: it was not raised.
    var originalLimit: UInt64 = 0
    /// The soft limit, once raised (Daemon `raiseDescriptorLimit`), and what that leaves per app.
    var budget = DescriptorBudget(limit: 1024)
    /// Whether apps keep their cgroup files and memory counters open between operations:
    /// false once the budget is spent.
    var keepingAppFiles = true
    /// The notify socket apps share once the budget is spent, bound at its first use.
    var sharedNotifyFD: Int32 = -1
    /// Datagrams on the shared socket from processes of no app, logged at most once a second.
    var sharedNotifyDrops = NotifyDrops()

    /// When the drops held back are due in the log.
    var nextDeadline: UInt64? { sharedNotifyDrops.dueAt }
}

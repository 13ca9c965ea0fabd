import Glibc

/// What the daemon keeps open per app while descriptors are plenty, and what it shares once
/// they are not (DescriptorBudget, Daemon+Descriptors, Daemon+Notify).
struct DescriptorShedding {
    /// The soft limit this process started with, given back to apps at their spawn
    /// (programs using select() rely on staying below 1024); 0: it was not raised.
    var originalLimit: UInt64 = 0
    var budget = DescriptorBudget(limit: 1024)  // the soft limit, once raised
    var keepingAppFiles = true  // false once the budget is spent
    var sharedNotifyFD: Int32 = -1  // bound at its first use
    /// Datagrams on the shared socket from processes of no app, logged at most once a second.
    var sharedNotifyDrops = NotifyDrops()
    /// Datagrams on the shared socket from no known app while launches wait on their stand-ins
    /// (sender, text): attributed again once those launches end (`Daemon.replayHeldSharedNotify`).
    var heldSharedNotify: [(sender: pid_t, text: String)] = []
    var nextDeadline: UInt64? { sharedNotifyDrops.dueAt }
}

/// A freeze or thaw the kernel is working on for an app: a state of the loop, never a wait
/// in it. The operation, what it is for and when it is looked at again travel together, so
/// there is no re-check time without an operation, nor a purpose left over from the last one.
struct FreezeInFlight {
    var operation: FreezeOperation
    /// Why it runs when the lifecycle does not wait for it (a thaw so a frozen app can act on
    /// SIGTERM, or one a previous daemon began): only logged. nil: the lifecycle's own.
    let aside: AsideThaw?
    /// When the loop steps it again if cgroup.events has not woken it first; nil until a step
    /// has said.
    var recheckAt: UInt64?
}

/// The removal of an app's cgroups after its main process ended (AppCgroups' destroy, stepped
/// by the loop): nil on the app when none is under way.
struct CgroupRemoval {
    /// When the loop steps it again if cgroup.events has not woken it first; nil: on a wake-up only.
    var recheckAt: UInt64?
}

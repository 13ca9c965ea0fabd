/// The times records and events carry, as `Duration`s; the `…Nanos` fields are the JSON's.
extension Event {
    /// How long the step took (`duration_ns`): a freeze's or thaw's kernel confirmation, a
    /// launch's or resume's time to ready, an end's time from the request; nil where none.
    public var duration: Duration? { durationNanos.map { .nanoseconds($0) } }
    /// The grace (`grace_ns`): granted, on a notice; used, on a freeze.
    public var grace: Duration? { graceNanos.map { .nanoseconds($0) } }
}

extension AppRecord {
    /// Launch → ready (the cold start), once the app was ready.
    public var coldStart: Duration? { coldStartNanos.map { .nanoseconds($0) } }
    /// The kernel's confirmation time of the app's last freeze.
    public var lastFreeze: Duration? { lastFreezeNanos.map { .nanoseconds($0) } }
    /// The kernel's confirmation time of the app's last thaw.
    public var lastThaw: Duration? { lastThawNanos.map { .nanoseconds($0) } }
}

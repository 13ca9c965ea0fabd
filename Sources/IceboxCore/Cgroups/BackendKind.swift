/// The three ways icebox can freeze an app.
public enum BackendKind: String, Codable, Sendable, CaseIterable {
    /// cgroup v2: `cgroup.freeze`, confirmed by `cgroup.events` (`frozen 1`).
    case cgroup2
    /// The cgroup v1 freezer: `freezer.state` FROZEN.
    case cgroup1
    /// SIGSTOP to every process of the app, SIGCONT to thaw: where no cgroup freezer is usable.
    case signal
}

import Glibc
import IceboxSystem

/// Keeping descriptors per app while there are plenty, shedding them when not (DescriptorBudget).
extension Daemon {
    /// Whether the next app launched gets a notify socket of its own.
    var nextAppGetsOwnNotifySocket: Bool {
        descriptors.budget.isPlenty(apps: apps.count + 1, clients: clients.count)
    }

    /// Looks at the budget again after the number of apps changed (`app`: the one just added).
    /// Crossing it, every app between operations lets its files go; back under, they are kept.
    func rebalanceDescriptors(adding app: LiveApp? = nil) {
        let plenty = descriptors.budget.isPlenty(apps: apps.count, clients: clients.count)
        if plenty == descriptors.keepingAppFiles {
            if !plenty, let app { shedDescriptors(app) }
            return
        }
        descriptors.keepingAppFiles = plenty
        if plenty {
            logDaemon("\(apps.count) apps: descriptors are plenty again; apps keep their cgroup files open between operations")
            return
        }
        for app in apps.values { shedDescriptors(app) }
        logDaemon(
            "\(apps.count) apps: keeping \(DescriptorBudget.keptPerApp) descriptors each would take more than half the limit of \(descriptors.budget.limit); cgroup files are now opened per operation, and apps launched from now on share the notify socket \(config.paths.sharedNotifySocket)"
        )
    }

    /// Lets go of what `app` keeps open between operations, unless one is under way. A departure
    /// from its cgroup is then noticed at the next request about it.
    func shedDescriptors(_ app: LiveApp) {
        guard app.freeze == nil, app.removal == nil else { return }
        watchCgroupEvents(app, nil)
        app.cgroups.release()
        app.statFile.release()
    }
}

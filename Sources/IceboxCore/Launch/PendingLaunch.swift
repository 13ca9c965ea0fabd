import IceboxSystem

/// What `Daemon.start` came to: the app, or a spawn a stand-in is making.
enum LaunchStart {
    case started(LiveApp)
    case spawning(PendingLaunch)
}

/// A launch whose app a spawn stand-in has been asked to clone, until it answers: a state of the
/// loop, not a wait in it (a stopped stand-in would hold up every client for the spawn time-out).
/// At its deadline it fails and is rolled back. It holds what the start made (record, cgroups,
/// notify socket), the rest of the start (`finish`) and its undo (`rollBack`).
final class PendingLaunch {
    let options: LaunchOptions
    let standIn: SpawnPool.Entry
    let request: SpawnRequest
    /// When it is given up on (monotonic ns): the daemon's freeze time-out from its spawn.
    let deadline: UInt64
    /// The rest of the start with the spawn's outcome: the app, registered nowhere yet.
    let finish: (Result<SpawnedProcess, SpawnError>) throws -> LiveApp
    /// Undoes what the start made (Daemon+Launch `start`'s cleanup), waiting for nothing.
    let rollBack: () -> Void
    /// Closes the spawn's descriptors (its log, its cgroups'), kept until the answer: a
    /// stand-in that turns out unusable leaves the spawn to the direct way.
    let release: () -> Void
    /// Who launched it: a client's connection (nil once it went away, or for the daemon's
    /// own launches), its standard streams for `icebox run`.
    var client: Int32?
    var stdio: [Int32] = []

    init(
        options: LaunchOptions, standIn: SpawnPool.Entry, request: SpawnRequest, deadline: UInt64,
        finish: @escaping (Result<SpawnedProcess, SpawnError>) throws -> LiveApp, rollBack: @escaping () -> Void,
        release: @escaping () -> Void
    ) {
        self.options = options
        self.standIn = standIn
        self.request = request
        self.deadline = deadline
        self.finish = finish
        self.rollBack = rollBack
        self.release = release
    }

    /// The stand-in's socket, readable when it answers (or is gone).
    var watchDescriptor: Int32 { standIn.standIn.watchDescriptor }
}

/// The launches waiting on a stand-in, by app name: the one owner of them until their spawn
/// is answered, given up on, or rolled back by a stopping daemon (Daemon+Launch).
final class PendingLaunches {
    private var byName: [String: PendingLaunch] = [:]

    var isEmpty: Bool { byName.isEmpty }
    var all: [PendingLaunch] { Array(byName.values) }

    func contains(_ name: String) -> Bool { byName[name] != nil }
    func add(_ launch: PendingLaunch) { byName[launch.options.name] = launch }

    /// Takes it out (answered, given up on, or rolled back).
    @discardableResult
    func remove(_ name: String) -> PendingLaunch? { byName.removeValue(forKey: name) }

    /// The one whose stand-in's socket this is.
    func waiting(on fd: Int32) -> PendingLaunch? { byName.values.first { $0.watchDescriptor == fd } }

    /// The earliest deadline, for the loop's sleep.
    var nextDeadline: UInt64? { byName.values.lazy.map(\.deadline).min() }

    /// Those past their deadline.
    func due(now: UInt64) -> [PendingLaunch] { byName.values.filter { $0.deadline <= now } }

    /// Its client went away: nobody is answered.
    func clientGone(_ fd: Int32) {
        for launch in byName.values where launch.client == fd { launch.client = nil }
    }
}

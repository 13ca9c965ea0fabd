import Glibc
import IceboxSystem

/// Spawn stand-ins parked in v1 cgroups of their own, one per kind of launch, so that a launch on a
/// hybrid or v1 host never waits on a write to cgroup.procs (SpawnStandIn says why that write is
/// slow). A launch takes a ready one (`take`); AppCgroups renames its directories to the app's name
/// (a v1 directory keeps its members across a rename) and the stand-in clones the app into them;
/// the next turn of the loop parks a new one (`fill`).
///
/// The owner of the parked directories (`<v1 root>/.stand-in-<daemon pid>-<n>`) until a launch
/// takes them; the stand-in writes only its own membership. Without a v1 hierarchy to join (a pure
/// v2 host) there is nothing to park: clone3(CLONE_INTO_CGROUP) places an app without any write.
final class SpawnPool {
    /// The v1 directories a launch must place its app in: the v1 freezer's (backend
    /// cgroup1) and the v1 memory hierarchy's (hybrid hosts, for memory accounting).
    struct Kind: Hashable, CustomStringConvertible {
        var freezer: Bool
        var memory: Bool

        var description: String {
            [freezer ? "v1 freezer" : nil, memory ? "v1 memory" : nil].compactMap { $0 }.joined(separator: " + ")
        }
    }

    /// A parked stand-in and the directories it sits in.
    final class Entry {
        let kind: Kind
        let standIn: SpawnStandIn
        let directories: StandInDirectories

        init(kind: Kind, standIn: SpawnStandIn, directories: StandInDirectories) {
            self.kind = kind
            self.standIn = standIn
            self.directories = directories
        }

        /// Removes whichever of its directories still carry their parked names (a launch that
        /// took them renamed them: those are the app's now), once the stand-in is gone.
        func removeParkedDirectories() {
            for path in [directories.freezerV1, directories.memoryV1].compactMap({ $0 }) where FileIO.isDirectory(path) {
                rmdir(path)
            }
        }
    }

    /// What the loop should do after an event of a stand-in.
    enum Change {
        case none
        /// A stand-in was started: watch its socket (ready, or gone).
        case started(Entry)
        /// A stand-in could not be started, failed or died: stop watching its socket (nil: never
        /// watched; it closes when the entry goes), let it go without waiting (StandInDepartures)
        /// and log `reason`.
        case lost(Entry?, reason: String)
    }

    private let freezerRoot: String?
    private let memoryRoot: String?
    private var parked: [Entry] = []
    private var wanted: Set<Kind> = []
    /// Kinds given up on, and why: launches of that kind spawn the direct way.
    private(set) var disabled: [Kind: String] = [:]
    private var losses: [Kind: Int] = [:]
    /// Stand-ins let go (lost, or done with by a launch) until they are gone.
    let departures = StandInDepartures()
    private var sequence = 0
    /// Stand-ins that die while parked are replaced this many times, then the kind is
    /// given up on: something kills them, and forking again would only feed it.
    static let maxLosses = 3

    init(freezerRoot: String?, memoryRoot: String?) {
        self.freezerRoot = freezerRoot
        self.memoryRoot = memoryRoot
    }

    /// The kind of stand-in a launch with `backend` needs; nil when it joins no v1 cgroup.
    func kind(for backend: BackendKind) -> Kind? {
        let kind = Kind(freezer: backend == .cgroup1 && freezerRoot != nil, memory: memoryRoot != nil)
        return kind.freezer || kind.memory ? kind : nil
    }

    /// Asks for one parked stand-in of this kind (started by the next `fill`).
    func want(_ kind: Kind) {
        if disabled[kind] == nil && !parked.contains(where: { $0.kind == kind }) { wanted.insert(kind) }
    }

    var wantsFill: Bool { !wanted.isEmpty }
    /// When the loop parks the stand-ins wanted (Daemon+StandIns, after a quiet period); nil: none.
    var fillAt: UInt64?

    /// A ready stand-in of this kind, now the caller's (it lets it go through `StandInDepartures`
    /// when done); nil when none is ready. Another is wanted in its place.
    func take(_ kind: Kind) -> Entry? {
        defer { want(kind) }
        // Ready and not yet heard of by the loop counts too: the first launch after a start.
        guard let i = parked.firstIndex(where: { $0.kind == kind && ((try? $0.standIn.checkReady()) ?? false) }) else { return nil }
        return parked.remove(at: i)
    }

    /// Starts the wanted stand-ins: directories made, each joined by a fork of this process.
    func fill() -> [Change] {
        let kinds = wanted
        wanted = []
        return kinds.map { kind in
            do throws(SystemError) {
                return .started(try start(kind))
            } catch {
                disabled[kind] = error.description
                return .lost(nil, reason: Self.givenUp(kind, error.description))
            }
        }
    }

    /// The socket of a parked stand-in was readable: it is ready, or it failed or died.
    func readable(_ fd: Int32) -> Change {
        guard let i = parked.firstIndex(where: { $0.standIn.watchDescriptor == fd }) else { return .none }
        let entry = parked[i]
        if !entry.standIn.isReady {
            do throws(SystemError) {
                _ = try entry.standIn.checkReady()
                return .none
            } catch {
                parked.remove(at: i)
                disabled[entry.kind] = error.description
                return .lost(entry, reason: Self.givenUp(entry.kind, error.description))
            }
        }
        // A ready one has nothing more to say: readable again means it is gone.
        parked.remove(at: i)
        losses[entry.kind, default: 0] += 1
        let why = "the spawn stand-in pid \(entry.standIn.handle.pid) exited while parked"
        if losses[entry.kind, default: 0] > Self.maxLosses {
            disabled[entry.kind] = why
            return .lost(entry, reason: Self.givenUp(entry.kind, why))
        }
        want(entry.kind)
        return .lost(entry, reason: why + "; another is started")
    }

    private static func givenUp(_ kind: Kind, _ why: String) -> String {
        "spawn stand-ins (\(kind)) given up: \(why); launches move each app into its v1 cgroups themselves"
    }

    /// Every parked stand-in goes, with its directories (the daemon stops). Blocking,
    /// bounded (SpawnStandIn.dismiss): the loop has ended, nothing else is served.
    func drain() -> [Entry] {
        let all = parked
        parked = []
        wanted = []
        for entry in all {
            entry.standIn.dismiss()
            entry.removeParkedDirectories()
        }
        return all
    }

    private func start(_ kind: Kind) throws(SystemError) -> Entry {
        sequence += 1
        let name = ".stand-in-\(getpid())-\(sequence)"
        var made: [String] = []
        var procs: [Int32] = []
        defer { for fd in procs { close(fd) } }
        do throws(SystemError) {
            for root in [kind.freezer ? freezerRoot : nil, kind.memory ? memoryRoot : nil].compactMap({ $0 }) {
                try FileIO.makeDirectories(root)
                let path = root + "/" + name
                if mkdir(path, 0o755) < 0 { throw SystemError("mkdir a spawn stand-in's cgroup", path: path) }
                made.append(path)
                procs.append(try FileIO.openDescriptor(path + "/cgroup.procs", flags: O_WRONLY))
            }
            let standIn = try SpawnStandIn(joining: procs)
            let entry = Entry(
                kind: kind, standIn: standIn,
                directories: StandInDirectories(
                    freezerV1: kind.freezer ? freezerRoot.map { $0 + "/" + name } : nil,
                    memoryV1: kind.memory ? memoryRoot.map { $0 + "/" + name } : nil))
            parked.append(entry)
            return entry
        } catch {
            for path in made { rmdir(path) }
            throw error
        }
    }
}

/// The v1 directories a stand-in sits in, for AppCgroups to take over as an app's.
package struct StandInDirectories: Sendable, Equatable {
    package var freezerV1: String?
    package var memoryV1: String?
}

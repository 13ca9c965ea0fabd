import Glibc
import IceboxSystem

/// Where a process sits in each hierarchy icebox uses: what an adopted app came from, and where
/// `release` (or a move rolled back) sends its processes. nil: not on this host, or not known.
struct CgroupPlace: Equatable, Sendable {
    var v2: String?
    var freezerV1: String?
    var memoryV1: String?
}

/// Moving running processes in and out of an app's cgroups (`icebox adopt`, `icebox
/// release`). Here, with the rest of AppCgroups, so that an app's cgroup files keep one writer.
extension AppCgroups {
    /// Freezes the app's still empty cgroup before anything is moved in: a task written into a
    /// frozen cgroup freezes on arrival (v2 freezes a joining task; v1's freezer_attach matches the
    /// cgroup's state), and its children are born inside, frozen: none is born outside to escape
    /// the move. The v2 cgroup holds the move whatever the backend, the v1 freezer only without
    /// one. Throws when there is neither.
    func holdForMove() throws(SystemError) {
        if let v2 {
            try v2.setFrozen(true)
        } else if let freezerV1 {
            try freezerV1.stateControl.write("FROZEN")
        } else {
            throw SystemError("hold the move of", path: name, errno: ENOTSUP)
        }
    }

    /// Thaws what `holdForMove` froze: the moved tasks run again, now inside.
    func endMoveHold() throws(SystemError) {
        if let v2 {
            try v2.setFrozen(false)
        } else if let freezerV1 {
            try freezerV1.stateControl.write("THAWED")
        }
    }

    /// Moves one process (all its threads: cgroup.procs) in: the v2 cgroup first (it holds the
    /// move), then the v1 freezer one; the v1 memory one is best effort, as at launch. ESRCH (the
    /// process exited meanwhile) is not an error: returns false.
    func moveIn(_ pid: pid_t) throws(SystemError) -> Bool {
        do {
            if let v2 { try FileIO.write(v2.procsPath, String(pid)) }
            if let freezerV1 { try freezerV1.addProcess(pid) }
        } catch {
            if error.errno == ESRCH { return false }
            throw error
        }
        // Best effort, as at launch: the v2 or freezer cgroup holds it; without the memory one only
        // memory precision is lost (ESRCH: it exited meanwhile).
        if let memoryV1 { try? memoryV1.addProcess(pid) }
        return true
    }

    /// The most rounds `moveAllOut` takes: each round moves every member found, and a frozen
    /// member forks no more, so a second round finds at most what was mid-fork in the first.
    static let moveOutRounds = 16

    /// A release: every process out to `place`, none left behind by a fork. The app's cgroup is
    /// frozen first (a task mid-fork finishes it, its child born inside for the next round), then
    /// each round moves what is inside until it is empty. A task moved out of a frozen cgroup into
    /// one that is not thaws (v2; freezer_attach on v1), so a suspended app comes out thawed;
    /// SIGCONT undoes the signal backend's SIGSTOP. Returns what failed, or that tasks stayed (then
    /// what is inside is thawed again unless `keepFrozen`: a suspended app stays frozen).
    func moveAllOut(to place: CgroupPlace, backend: BackendKind, keepFrozen: Bool) -> [String] {
        // Without the hold (signal backend: ENOTSUP; a cgroup gone) the rounds still move every
        // member, a child forked meanwhile is found by the next, and what stays is reported.
        try? holdForMove()
        var problems: [String] = []
        for _ in 0..<Self.moveOutRounds {
            let inside = members() ?? []
            if inside.isEmpty { break }
            problems = moveOut(to: place)
            if !problems.isEmpty { break }
            if backend == .signal { for pid in inside { kill(pid, SIGCONT) } }
        }
        let left = members() ?? []
        if problems.isEmpty && !left.isEmpty {
            problems.append(
                "\(left.count) process\(left.count == 1 ? "" : "es") still in \(v2Path ?? freezerV1Path ?? name) after \(Self.moveOutRounds) rounds"
            )
        }
        // Failed: it stays the app, frozen only if it was suspended. A refused thaw is said with
        // the rest: else the app stays frozen, reported only as a failed move.
        if !problems.isEmpty && !keepFrozen {
            do { try endMoveHold() } catch { problems.append("cannot thaw what stayed: \(error)") }
        }
        return problems
    }

    /// Moves every process out, each to `placeOf(pid)` if given, else `place`, hierarchy by
    /// hierarchy; returns what failed (an exit meanwhile is no failure), the rest moved.
    func moveOut(to place: CgroupPlace, placeOf: (pid_t) -> CgroupPlace? = { _ in nil }) -> [String] {
        var problems: [String] = []
        func write(_ dir: String?, _ pid: pid_t) {
            guard let dir else { return }
            do { try FileIO.write(dir + "/cgroup.procs", String(pid)) } catch {
                if error.errno != ESRCH { problems.append(error.description) }
            }
        }
        var pids = members() ?? []
        // A process may be in the v1 cgroups and not the v2 one (moved by someone else).
        if let freezerV1 { pids += freezerV1.subtreeProcs().filter { !pids.contains($0) } }
        for pid in pids {
            let target = placeOf(pid) ?? place
            if v2 != nil { write(target.v2, pid) }
            if freezerV1 != nil { write(target.freezerV1, pid) }
            if memoryV1 != nil { write(target.memoryV1, pid) }
        }
        return problems
    }

    /// rmdir of the app's (emptied) cgroups, bottom-up, and the descriptors closed: what a
    /// release leaves. What could not be removed.
    func removeEmptied() -> [String] {
        close()
        var problems: [SystemError] = []
        if let v2 { problems += CgroupTree.remove(v2.path, what: "cgroup") }
        if let freezerV1 { problems += CgroupTree.remove(freezerV1.path, what: "v1 freezer cgroup") }
        if let memoryV1 { problems += CgroupTree.remove(memoryV1.path, what: "v1 memory cgroup") }
        return problems.map(\.description)
    }
}

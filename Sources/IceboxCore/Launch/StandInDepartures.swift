import Glibc
import IceboxSystem

/// Spawn stand-ins let go and not yet gone, their pidfds watched by the loop rather than waited for
/// (a second, then a SIGKILL and more, with every other client stopped): reaped at their exit,
/// their parked directories removed; killed past their deadline. The owner of its entries.
final class StandInDepartures {
    final class Departure {
        let entry: SpawnPool.Entry
        /// When it is killed if it has not exited by then (monotonic ns); nil once killed.
        var killAt: UInt64?
        /// The launch whose readiness waits for this stand-in to leave the app's v1 cgroups
        /// (Daemon+StandIns `standInExited`); nil when none does.
        weak var holding: LiveApp?

        init(entry: SpawnPool.Entry, killAt: UInt64, holding: LiveApp?) {
            self.entry = entry
            self.killAt = killAt
            self.holding = holding
        }
    }

    /// How long a let-go stand-in has to exit before it is killed: it only has its copy of the
    /// daemon's address space to tear down (~150 µs), so a stand-in still there after this is stuck
    /// (stopped, traced) and will not go by itself.
    static let exitNanos: UInt64 = 1_000_000_000

    private var byPidfd: [Int32: Departure] = [:]

    /// The earliest kill deadline, for the loop's sleep.
    var nextDeadline: UInt64? { byPidfd.values.compactMap(\.killAt).min() }

    /// Lets the stand-in go and keeps it until it is gone; returns its pidfd for the loop to watch.
    func add(_ entry: SpawnPool.Entry, holding app: LiveApp?, now: UInt64) -> Int32 {
        entry.standIn.letGo()
        let fd = entry.standIn.handle.pidfd
        byPidfd[fd] = Departure(entry: entry, killAt: now.saturatingAdd(Self.exitNanos), holding: app)
        return fd
    }

    /// The pidfd of the departing stand-in with this pid (an exit SIGCHLD reported first).
    func pidfd(of pid: pid_t) -> Int32? {
        byPidfd.first { $0.value.entry.standIn.handle.pid == pid }?.key
    }

    /// Its pidfd was readable: reaped and its directories removed, and it is no longer kept (nil
    /// while it still runs).
    func exited(_ fd: Int32) -> Departure? {
        guard let departure = byPidfd[fd] else { return nil }
        // ECHILD: reaped by someone else already (gone all the same); anything else is a bug
        // in what we hold, and keeping the entry would only keep it forever.
        do throws(SystemError) {
            if try departure.entry.standIn.handle.reapIfExited() == nil { return nil }
        } catch {}
        byPidfd.removeValue(forKey: fd)
        departure.entry.removeParkedDirectories()
        return departure
    }

    /// Kills those past their deadline; their exit is reported through their pidfd.
    func fire(now: UInt64) {
        for departure in byPidfd.values {
            guard let at = departure.killAt, at <= now else { continue }
            departure.killAt = nil
            // A stand-in gone meanwhile (ESRCH) is reported false, and reaped by its pidfd.
            _ = try? departure.entry.standIn.handle.send(SIGKILL)
        }
    }

    /// The daemon stops: each is waited for, to its deadline, then killed and reaped (bounded:
    /// SpawnStandIn.dismiss), and its directories removed. Blocking is fine here: the loop
    /// has ended and nothing else is served. Returns their pidfds, to be unwatched.
    func drain() -> [Int32] {
        let all = byPidfd
        byPidfd = [:]
        for departure in all.values {
            departure.entry.standIn.dismiss(deadline: departure.killAt ?? Clock.monotonicNanos())
            departure.entry.removeParkedDirectories()
        }
        return Array(all.keys)
    }
}

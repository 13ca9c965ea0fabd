import Glibc
import IceboxSystem

/// An empty v1 freezer cgroup kept FROZEN while the daemon has apps on the v1 freezer, so that
/// their freezes and thaws never flip the kernel's `freezer_active` static key.
///
/// The v1 freezer turns that key on when a first cgroup starts to freeze and off when the last
/// thaws; each flip rewrites kernel code with IPIs to every CPU (`static_key_slow_inc/dec` →
/// `text_poke`, seen with perf). On a 2-vCPU VM a flip was 150–200 µs of each write: a one-process
/// freeze took ~170–400 µs and its thaw ~130–170 µs, against ~10 and ~5 µs with a cgroup held
/// frozen (benchmarks/RESULTS.md), for any v1 freezer user on the host. Keeping the key on costs a
/// cgroup lookup in `freezing()`, paid anyway while any app is suspended.
///
/// The only writer of `<v1 freezer root>/.freezer-hold-<daemon pid>`. No task is put in it (only
/// whoever may write the root's cgroup.procs could); an empty cgroup is FROZEN at once. A daemon
/// that dies leaves it, empty, for the next alone on the root to remove with the other empty
/// leftovers (adoptUnrecordedCgroups).
final class FreezerKeyHold {
    let path: String
    private var held = false
    /// A failure to hold it was logged: the daemon says so once (Daemon `updateFreezerKeyHold`).
    var failureLogged = false

    init(root: String, daemon: pid_t = getpid()) {
        path = root + "/.freezer-hold-\(daemon)"
    }

    /// Makes the cgroup and freezes it. On failure nothing is left behind and the reason is
    /// returned (freezes still work, each flipping the key).
    func acquire() -> SystemError? {
        if held { return nil }
        do throws(SystemError) {
            if mkdir(path, 0o700) < 0 && errno != EEXIST { throw SystemError("mkdir", path: path) }
            try FileIO.write(path + "/freezer.state", "FROZEN")
        } catch {
            rmdir(path)
            return error
        }
        held = true
        return nil
    }

    /// Thaws and removes it: the key goes off with it if no other cgroup is freezing. Thawed first,
    /// so that a task someone put in it runs again and stays where it is (its rmdir then fails, and
    /// the directory is left to whoever put it there).
    func release() {
        guard held else { return }
        held = false
        // Best effort: nothing of ours runs in it, so a failed thaw stops nothing; one left behind
        // goes with the next daemon's empty leftovers.
        try? FileIO.write(path + "/freezer.state", "THAWED")
        rmdir(path)
    }
}

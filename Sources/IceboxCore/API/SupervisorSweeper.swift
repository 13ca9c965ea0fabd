import Glibc
import IceboxSystem

/// Cleans up after a ``Supervisor`` whose process died without `stop()` (a test runner's SIGKILL, a
/// crash, Ctrl-C), when none of its code runs any more: a `/bin/sh` started with it, in a session
/// of its own (out of the terminal's SIGINT), reading a pipe whose only writer is the supervisor.
/// `stop()` writes `q` and the sweeper exits; when the process dies, however, the kernel closes the
/// pipe and the sweeper kills every process in the supervisor's cgroups (frozen ones too), removes
/// the cgroups in every hierarchy and the directories (as Testcontainers' Ryuk does for
/// containers). It knows only cgroups: an app frozen with SIGSTOP on a host with no cgroup
/// hierarchy is left.
// Unchecked: its handle is used once, by the one `stop()` that gets past the supervisor's
// `stopped` flag, or by a `start()` that failed before any other thread saw it.
struct SupervisorSweeper: @unchecked Sendable {
    let handle: ProcessHandle
    /// The pipe's write end: its last close (the process's death included) starts the sweep.
    private let writeEnd: Int32

    /// The sweep, in sh, once the pipe has ended. A v2 cgroup is killed whole with cgroup.kill
    /// (frozen tasks die too); a v1 one gets SIGKILL for each task, then THAWED (a frozen v1
    /// task dies only once thawed). The cgroups are removed bottom up once empty; v1 has no
    /// event to wait for, so emptiness is looked at every 10 ms for at most 3 s (after its
    /// owner's death, nothing here is on anyone's path). Arguments: `cgroup:PATH` a tree made
    /// for the supervisor, `under:PATH` the trees below one it was given, `dir:PATH` a directory.
    ///
    /// Before the end, the pipe may name processes to kill first, a line `proc:PID:TICKS` each
    /// (``IceboxDaemon``'s daemon): killed only if /proc/PID/stat still gives that start time
    /// (field 22), so a reused pid is spared.
    static let script = #"""
        procs=""
        while IFS= read -r word; do
            case $word in
            q) exit 0 ;;
            proc:*) procs="$procs ${word#proc:}" ;;
            esac
        done
        trap '' HUP INT TERM PIPE
        start_ticks() { set -- $1; shift 19; echo "$1"; }
        for p in $procs; do
            s=$(cat "/proc/${p%%:*}/stat" 2>/dev/null) || continue
            [ "$(start_ticks "${s##*) }")" = "${p#*:}" ] && kill -KILL "${p%%:*}" 2>/dev/null
        done
        # Gone (or a zombie) before the sweep: a daemon still dying could make a cgroup (a
        # spawn stand-in's) after the sweep looked, and leave it. 1 s at most.
        for p in $procs; do
            i=0
            while [ $i -lt 100 ]; do
                s=$(cat "/proc/${p%%:*}/stat" 2>/dev/null) || break
                s=${s##*) }
                [ "${s%% *}" = Z ] && break
                sleep 0.01
                i=$((i + 1))
            done
        done
        # Calls $1 with each cgroup tree to sweep (never word-split: paths may hold spaces).
        each_tree() {
            f=$1
            shift
            for a in "$@"; do
                case $a in
                cgroup:*) [ -d "${a#cgroup:}" ] && "$f" "${a#cgroup:}" ;;
                under:*) for d in "${a#under:}"/*/ "${a#under:}"/.[!.]*/; do [ -d "$d" ] && "$f" "${d%/}"; done ;;
                esac
            done
        }
        kill_tree() {
            find "$1" -depth -type d 2>/dev/null | while IFS= read -r d; do
                if [ -e "$d/cgroup.kill" ]; then echo 1 >"$d/cgroup.kill" 2>/dev/null; continue; fi
                for p in $(cat "$d/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
                [ -e "$d/freezer.state" ] && echo THAWED >"$d/freezer.state" 2>/dev/null
            done
        }
        note_populated() { [ -n "$(find "$1" -name cgroup.procs -exec cat {} + 2>/dev/null)" ] && populated=1; }
        remove_tree() { find "$1" -depth -type d -exec rmdir {} + 2>/dev/null; }
        each_tree kill_tree "$@"
        i=0
        while [ $i -lt 300 ]; do
            populated=""
            each_tree note_populated "$@"
            [ -z "$populated" ] && break
            each_tree kill_tree "$@"
            sleep 0.01
            i=$((i + 1))
        done
        each_tree remove_tree "$@"
        for a in "$@"; do case $a in dir:*) rm -rf -- "${a#dir:}" ;; esac; done
        """#

    /// What one sweep removes: cgroup trees made for the supervisor (whole), the trees below
    /// cgroups it was given (not those), and directories made for it.
    struct Targets {
        var cgroupTrees: [String] = []
        var cgroupParents: [String] = []
        var directories: [String] = []

        var arguments: [String] {
            cgroupTrees.map { "cgroup:" + $0 } + cgroupParents.map { "under:" + $0 } + directories.map { "dir:" + $0 }
        }
    }

    /// Starts the sweeper for `targets`.
    static func start(_ targets: Targets) throws(IceboxError) -> SupervisorSweeper {
        let pipe: PipePair
        do { pipe = try PipePair() } catch { throw IceboxError("start the supervisor's sweeper", error) }
        defer { close(pipe.readEnd) }
        var request = SpawnRequest(
            executable: "/bin/sh", arguments: ["/bin/sh", "-c", script, "icebox-sweeper"] + targets.arguments,
            environment: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"])
        request.stdin = pipe.readEnd
        request.newSession = true
        do {
            let spawned = try Spawner.spawn(request)
            return SupervisorSweeper(handle: spawned.handle, writeEnd: pipe.writeEnd)
        } catch {
            close(pipe.writeEnd)
            throw IceboxError(.failure, "start the supervisor's sweeper (/bin/sh): \(error)")
        }
    }

    /// Has the sweep kill `pid` (SIGKILL) before anything else, if it still is the process
    /// that started at `startTicks` (/proc/PID/stat's field 22).
    func killFirst(pid: pid_t, startTicks: UInt64) {
        _ = "proc:\(pid):\(startTicks)\n".withCString { s in retryingOnInterrupt { write(writeEnd, s, strlen(s)) } }
    }

    /// After a clean stop: tells the sweeper there is nothing to sweep and reaps it.
    func dismiss(until deadline: UInt64) {
        _ = retryingOnInterrupt { write(writeEnd, "q\n", 2) }
        close(writeEnd)
        // A wait that failed or timed out is settled the same way: SIGKILL and a bounded wait.
        if (try? handle.wait(until: deadline)) == nil {
            // ESRCH only: the sweeper exited meanwhile, and the wait below reaps it.
            _ = try? handle.send(SIGKILL)
            // One still unreaped a second after SIGKILL is the kernel's to finish; a cleanup must
            // not throw.
            _ = try? handle.wait(until: deadline.saturatingAdd(1_000_000_000))
        }
    }
}

"""One icebox daemon under test, with its own runtime and state directories and cgroup root, and
the phases of a suspend and resume read from its event log."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

from .command import run_captured
from .host import CG2, V1_MOUNTS, log, read, remove_cgroup_tree, signal_quietly


class Session:
    def __init__(self, icebox, tag):
        self.icebox = icebox
        self.work = tempfile.mkdtemp(prefix=f"icebox-bench-{tag}-")
        base = f"icebox-bench-{os.getpid()}-{tag}"
        self.root = f"{CG2}/{base}" if CG2 else None
        # the daemon mirrors its root in the v1 freezer (and, in newer builds, memory) hierarchies
        self.v1roots = [f"{m}/{base}" for m in V1_MOUNTS]
        self.env = dict(os.environ, ICEBOX_RUNTIME_DIR=self.work + "/run", ICEBOX_STATE_DIR=self.work + "/state")
        if self.root:
            self.env["ICEBOX_CGROUP_ROOT"] = self.root
        self.events_path = self.work + "/state/events.jsonl"
        self.offset = 0
        self.daemon = None

    def run(self, *args, check=True, timeout=300, env=None):
        """Runs icebox; returns (CompletedProcess, start ns, end ns) on CLOCK_MONOTONIC."""
        argv = [self.icebox, *args]
        r, t0, t1, _ = run_captured(argv, env=env or self.env, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"icebox {' '.join(args[:6])}{' …' if len(args) > 6 else ''}: exit {r.returncode}: "
                               f"{(r.stderr or r.stdout).strip()[:500]}")
        if self.daemon is None:
            self.daemon = self.daemon_pid()
        return r, t0, t1

    def ps(self, *extra):
        r, _, _ = self.run("ps", "--json", *extra)
        return {a["name"]: a for a in json.loads(r.stdout)}

    def new_events(self):
        try:
            with open(self.events_path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1
        self.offset += end
        return [json.loads(l) for l in data[:end].splitlines() if l.strip()]

    def daemon_pid(self):
        try:
            return int(read(self.work + "/run/daemon.lock").split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def daemon_alive(self, pid):
        try:
            return os.path.realpath(f"/proc/{pid}/exe") == os.path.realpath(self.icebox)
        except OSError:
            return False

    def stop_daemon(self, env=None, timeout=600):
        """`icebox daemon --stop`, terminating every app (newer builds leave them unless told)."""
        argv = [self.icebox, "daemon", "--stop"] + (["--terminate-apps"] if STOP_TERMINATES_FLAG.get(self.icebox) else [])
        return subprocess.run(argv, env=env or self.env, capture_output=True, text=True, timeout=timeout)

    def close(self):
        pid = self.daemon_pid() or self.daemon
        try:
            self.stop_daemon(timeout=300)
        except Exception as e:  # noqa: BLE001 - cleanup goes on whatever happened
            log(f"daemon --stop: {e}")
        if pid:
            for _ in range(100):
                if not self.daemon_alive(pid):
                    break
                time.sleep(0.05)
            else:
                log(f"daemon {pid} still runs after --stop: SIGKILL")
                signal_quietly(pid, signal.SIGKILL)
        for d in [self.root] + self.v1roots:
            if d:
                remove_cgroup_tree(d)
        shutil.rmtree(self.work, ignore_errors=True)


STOP_TERMINATES_FLAG = {}


def check_stop_flag(icebox):
    r = subprocess.run([icebox, "daemon", "--help"], capture_output=True, text=True)
    STOP_TERMINATES_FLAG[icebox] = "--terminate-apps" in r.stdout + r.stderr


# The phases of an icebox suspend and resume, from the daemon's event timestamps (the same
# CLOCK_MONOTONIC as the harness's): as the CLI part splits them, so the two harnesses' phases
# compare where their walls differ.
PHASES = ("s_client_to_daemon", "s_daemon_before_freeze", "ice_freeze", "s_reply_and_exit",
          "r_client_to_thaw", "ice_thaw", "r_reply_and_exit")


def phases_of(events, name, suspend, resume):
    """{phase: ns} of one suspend (spawn, exit) and the resume after it, from the app's events
    since; {} where an event is missing."""
    evs = {e["event"]: e for e in events if e.get("app") == name}
    fz, th, notice = evs.get("freeze"), evs.get("thaw"), evs.get("notice")
    if not fz or not th:
        return {}
    out = {"ice_freeze": fz["duration_ns"], "ice_thaw": th["duration_ns"],
           "s_reply_and_exit": suspend[1] - fz["monotonic_ns"],
           "r_client_to_thaw": th["monotonic_ns"] - th["duration_ns"] - resume[0],
           "r_reply_and_exit": resume[1] - th["monotonic_ns"]}
    if notice:
        out["s_client_to_daemon"] = notice["monotonic_ns"] - suspend[0]
        out["s_daemon_before_freeze"] = fz["monotonic_ns"] - fz["duration_ns"] - notice["monotonic_ns"]
    return out

"""The oneshot part's instances of one workload, one per kind of tool (a plain process in cgroups
of the benchmark's own, an icebox app per backend, an LXC and a runc container), and how each
is removed again."""
import json
import os
import signal
import subprocess
import time

from .command import run_bare
from .host import (CG2, V1_MOUNTS, cgroups_of, free_port, log, pids_of, read, remove_cgroup_tree, signal_quietly, threads_of,
                   wait_until_empty, write)
from .http_probe import http_get_when_up


SERVER_PYTHON = "/usr/bin/python3"  # the same interpreter inside the containers (they bind-mount /usr)


def freezer_state(peer):
    """Which freezer says the instance is frozen right now: 'cgroup2', 'v1 freezer', both or none."""
    said = []
    if peer["v2"] and "frozen 1" in read(peer["v2"] + "/cgroup.events", ""):
        said.append("cgroup2 (cgroup.freeze)")
    if peer["v1"] and read(peer["v1"] + "/freezer.state", "").strip() == "FROZEN":
        said.append("v1 freezer (freezer.state)")
    return " and ".join(said) or "no freezer (SIGSTOP)"


def thaw_anyhow(peer):
    """Leaves an instance running whatever a failed tool left it in: thawed, continued."""
    for d, f, v in ((peer["v2"], "/cgroup.freeze", "0"), (peer["v1"], "/freezer.state", "THAWED")):
        try:
            if d:
                write(d + f, v)
        except OSError as e:
            log(f"oneshot: thawing {d}: {e}")
    for p in pids_of(peer["dir"]):
        signal_quietly(p, signal.SIGCONT)


class OneshotSetup:
    """The instances of one workload, one per kind of tool, and how to remove them."""

    def __init__(self, ctx, work, rootfs, key):
        self.ctx, self.work, self.rootfs, self.key = ctx, work, rootfs, key
        self.tag = f"ibx{os.getpid()}{key}"[:30]

    def argv(self, w, port, prefix):
        if w[2] is None:
            return [SERVER_PYTHON, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", prefix + "/www"]
        return [prefix + "/workload", *w[2]]

    def ready(self, peer, w):
        if w[2] is None:
            http_get_when_up(peer["port"])
        else:
            deadline = time.monotonic() + 120
            while threads_of(pids_of(peer["dir"])) < w[3]:  # no event says "N tasks exist"
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{peer['what']}: {threads_of(pids_of(peer['dir']))} of {w[3]} tasks after 120 s")
                time.sleep(0.01)
        run_bare(self.ctx.tools + "/bare", "settle", peer["dir"])
        return peer

    def peer(self, what, pid, port, dirs=None):
        v1, v2 = dirs or cgroups_of(pid)
        return {"what": what, "pid": pid, "port": port, "v1": v1, "v2": v2, "dir": v2 or v1}

    def plain(self, w, base_v2, base_v1):
        port = free_port()
        dirs = [f"{base_v2}/{self.key}"] + ([f"{base_v1}/{self.key}"] if base_v1 else [])
        for d in dirs:
            os.makedirs(d)

        def enter():
            for d in dirs:
                write(d + "/cgroup.procs", str(os.getpid()))
        p = subprocess.Popen(self.argv(w, port, self.rootfs), preexec_fn=enter, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

        def stop():
            thaw_anyhow(peer)
            try:
                write(dirs[0] + "/cgroup.kill", "1")
            except OSError as e:
                log(f"oneshot: {dirs[0]}/cgroup.kill: {e}")
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                log(f"oneshot: plain {self.key} (pid {p.pid}) still runs")
            # Its other processes (the workload's children) are still exiting: removed before
            # they are gone, the tree's removal found them and said so ("processes left").
            if not wait_until_empty(dirs[0]):
                log(f"oneshot: {dirs[0]} still holds processes 10 s after cgroup.kill")
            for d in dirs:
                remove_cgroup_tree(d)
        peer = self.peer("plain", p.pid, port, (dirs[1] if base_v1 else None, dirs[0]))
        self.ctx.cleanups.append(stop)
        return self.ready(peer, w)

    def icebox(self, w, sess, backend):
        port = free_port()
        name = f"{self.key}-{backend}"
        ready = ["--ready", "notify"] if w[2] else ["--ready", f"http:http://127.0.0.1:{port}/"]
        sess.run("launch", "--backend", backend, *ready, "--ready-timeout", "120s", "--background-signal", "none",
                 "--grace", "0", name, "--", *self.argv(w, port, self.rootfs), timeout=180)
        rec = sess.ps()[name]
        self.ctx.cleanups.append(lambda: sess.run("evict", name, check=False, timeout=120))
        peer = self.peer(f"icebox {backend}", rec["pid"], port, (rec.get("freezer_v1"), rec["cgroup"]))
        peer["name"] = name
        return self.ready(peer, w)

    def lxc(self, w):
        port = free_port()
        lxcpath, name = self.work + "/lxc", self.tag
        os.makedirs(f"{lxcpath}/{name}", exist_ok=True)
        logf = f"{lxcpath}/{name}.log"
        write(f"{lxcpath}/{name}/config", "\n".join([
            f"lxc.uts.name = {name}",
            f"lxc.rootfs.path = dir:{self.rootfs}",
            "lxc.init.cmd = " + " ".join(self.argv(w, port, "")),  # the workload is the container's init
            "lxc.net.0.type = none",  # the host's network: the GET reaches it on 127.0.0.1
            "lxc.autodev = 1",
            "lxc.mount.auto = proc:mixed sys:ro",
            "lxc.mount.entry = /usr usr none ro,bind 0 0",  # python3 and its libraries
            "lxc.apparmor.profile = unconfined",
            "lxc.console.path = none",
            "lxc.tty.max = 0",
            "lxc.environment = PYTHONDONTWRITEBYTECODE=1",
            f"lxc.log.file = {logf}",
            "lxc.log.level = WARN", ""]))

        def stop():
            r = subprocess.run(["lxc-stop", "-k", "-n", name, "-P", lxcpath], capture_output=True, text=True, timeout=60)
            if r.returncode != 0 and "is not running" not in r.stderr:
                log(f"oneshot: lxc-stop {name}: exit {r.returncode}: {r.stderr.strip()[:200]}")
            for m in V1_MOUNTS + [CG2]:
                for d in (f"{m}/lxc.payload.{name}", f"{m}/lxc.monitor.{name}"):
                    remove_cgroup_tree(d)
        self.ctx.cleanups.append(stop)
        r = subprocess.run(["lxc-start", "-n", name, "-P", lxcpath, "-d"], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise RuntimeError(f"lxc-start: exit {r.returncode}: {r.stderr.strip()[:300]} {read(logf, '').strip()[-500:]}")
        r = subprocess.run(["lxc-info", "-n", name, "-P", lxcpath, "-p", "-H"], capture_output=True, text=True, timeout=30)
        if r.returncode != 0 or not r.stdout.strip().isdigit():
            raise RuntimeError(f"lxc-info: exit {r.returncode}: {(r.stderr or r.stdout).strip()[:300]} {read(logf, '').strip()[-500:]}")
        peer = self.peer("lxc", int(r.stdout), port)
        peer.update(name=name, lxcpath=lxcpath)
        return self.ready(peer, w)

    def runc(self, w):
        port = free_port()
        cid, state = self.tag, self.work + "/runc-state"
        bundle = f"{self.work}/runc/{cid}"
        os.makedirs(bundle)
        subprocess.run(["runc", "spec"], cwd=bundle, check=True, capture_output=True, timeout=30)
        with open(bundle + "/config.json") as f:
            spec = json.load(f)
        cgpath = f"/icebox-bench-{os.getpid()}-runc-{self.key}"
        spec["process"].update(terminal=False, args=self.argv(w, port, ""), cwd="/")
        spec["process"]["env"].append("PYTHONDONTWRITEBYTECODE=1")
        spec["root"] = {"path": self.rootfs, "readonly": True}
        spec["mounts"].append({"destination": "/usr", "type": "bind", "source": "/usr", "options": ["rbind", "ro"]})
        # the host's network namespace: the GET reaches the server on 127.0.0.1
        spec["linux"]["namespaces"] = [n for n in spec["linux"]["namespaces"] if n["type"] != "network"]
        spec["linux"]["cgroupsPath"] = cgpath
        write(bundle + "/config.json", json.dumps(spec, indent=1))

        def stop():
            r = subprocess.run(["runc", "--root", state, "delete", "-f", cid], capture_output=True, text=True, timeout=60)
            if r.returncode != 0 and "does not exist" not in r.stderr:
                log(f"oneshot: runc delete {cid}: exit {r.returncode}: {r.stderr.strip()[:200]}")
            for m in V1_MOUNTS + [CG2]:
                remove_cgroup_tree(m + cgpath)
        self.ctx.cleanups.append(stop)
        with open(bundle + "/output", "w") as out:
            r = subprocess.run(["runc", "--root", state, "run", "-d", "--bundle", bundle, cid], stdin=subprocess.DEVNULL,
                               stdout=out, stderr=out, timeout=60)
        if r.returncode != 0:
            raise RuntimeError(f"runc run: exit {r.returncode}: {read(bundle + '/output', '').strip()[-500:]}")
        r = subprocess.run(["runc", "--root", state, "state", cid], capture_output=True, text=True, timeout=30)
        peer = self.peer("runc", json.loads(r.stdout)["pid"], port)
        peer.update(cid=cid, state=state)
        return self.ready(peer, w)

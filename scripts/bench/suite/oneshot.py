"""Part oneshot: one command per freeze or thaw, as a script would run it, icebox beside its peers
(a C one-shot, /bin/kill, lxc-freeze, runc pause) on the same workloads, interleaved round by
round in a new random order; process start-up alone."""
import os
import random
import shutil
import tempfile

from .command import run_bare, run_oneshot, tool_version
from .host import CG2, FREEZER, V1_MOUNTS, cpu_pressure, loadavg, log, pids_of, remove_cgroup_tree, task_headroom, write
from .http_probe import pending_get
from .oneshot_peers import SERVER_PYTHON, OneshotSetup, freezer_state, thaw_anyhow
from .session import phases_of
from .samples import fmt, stats


# (key, label, workload arguments or None for the HTTP server, tasks, rounds)
ONESHOT_WORKLOADS = [
    ("idle1", "1 idle process", ["procs", "1", "idle"], 1, 80),
    ("procs100", "100 idle processes", ["procs", "100", "idle"], 100, 30),
    ("threads1000", "1000 idle threads (1 process)", ["threads", "1000", "idle"], 1000, 30),
    ("http", "python3 -m http.server, a GET pending while frozen", None, 1, 80),
]


# (key, label, which instance it acts on)
ONESHOT_TOOLS = [
    ("c2", "C one-shot, cgroup2 (`bare once cgroup2`)", "plain"),
    ("c1", "C one-shot, v1 freezer (`bare once cgroup1`)", "plain"),
    ("kill", "`/bin/kill -STOP` / `-CONT` (unconfirmed)", "plain"),
    ("killc", "SIGSTOP / SIGCONT + confirm, C one-shot (`bare once signal`)", "plain"),
    ("lxc", "`lxc-freeze` / `lxc-unfreeze`", "lxc"),
    ("runc", "`runc pause` / `runc resume`", "runc"),
    ("icebox2", "`icebox suspend --grace 0` / `resume` (cgroup2)", "icebox2"),
    ("icebox1", "`icebox suspend --grace 0` / `resume` (cgroup1)", "icebox1"),
]


def oneshot_commands(ctx, tool, peer, sess):
    """(freeze argv, thaw argv, env) for one tool acting on its instance."""
    def once(backend, where):  # the C one-shot: `bare once BACKEND freeze|thaw DIR`
        return [ctx.tools + "/bare", "once", backend, "freeze", where], [ctx.tools + "/bare", "once", backend, "thaw", where], None
    if tool == "c2":
        return once("cgroup2", peer["v2"])
    if tool == "c1":
        return once("cgroup1", peer["v1"])
    if tool == "kill":
        pids = [str(p) for p in pids_of(peer["dir"])]
        return ["/bin/kill", "-STOP", *pids], ["/bin/kill", "-CONT", *pids], None
    if tool == "killc":
        return once("signal", peer["dir"])
    if tool == "lxc":
        where = ["-n", peer["name"], "-P", peer["lxcpath"]]
        return ["lxc-freeze", *where], ["lxc-unfreeze", *where], None
    if tool == "runc":
        return (["runc", "--root", peer["state"], "pause", peer["cid"]], ["runc", "--root", peer["state"], "resume", peer["cid"]],
                None)
    return [ctx.icebox, "suspend", "--grace", "0", peer["name"]], [ctx.icebox, "resume", peer["name"]], sess.env


def part_oneshot(ctx):
    work = tempfile.mkdtemp(prefix="icebox-bench-oneshot-")
    ctx.cleanups.append(lambda: shutil.rmtree(work, ignore_errors=True))
    sess = ctx.session("oneshot")
    base = f"icebox-bench-{os.getpid()}-oneshot"
    base_v2, base_v1 = f"{CG2}/{base}", (f"{FREEZER}/{base}" if FREEZER else None)
    for d in (base_v2, base_v1):
        if d:
            os.makedirs(d)
            ctx.cleanups.append(lambda d=d: remove_cgroup_tree(d))
    # LXC parks its monitor in a shared `lxc.pivot` cgroup in every hierarchy: removed again if it
    # was not there before
    pivots = [f"{m}/lxc.pivot" for m in V1_MOUNTS + [CG2] if not os.path.isdir(f"{m}/lxc.pivot")]
    ctx.cleanups.append(lambda: [remove_cgroup_tree(p) for p in pivots])

    missing = {}
    busybox = shutil.which("busybox")
    for tool, needs in (("lxc", ["lxc-start", "lxc-freeze", "lxc-unfreeze", "lxc-info", "lxc-stop"]), ("runc", ["runc"])):
        absent = [n for n in needs if not shutil.which(n)]
        if absent:
            missing[tool] = f"not installed: {', '.join(absent)} (scripts/bench/run installs lxc and runc)"
    # the containers' root: busybox (a shell to look around), the workload (static when libc6-dev has
    # libc.a), /usr bind-mounted read-only for python3
    rootfs = work + "/rootfs"
    for d in ("bin", "proc", "sys", "dev", "usr", "tmp", "www"):
        os.makedirs(f"{rootfs}/{d}")
    os.symlink("usr/lib", rootfs + "/lib")
    os.symlink("usr/lib64", rootfs + "/lib64")
    write(rootfs + "/www/index.html", "ok\n")
    if busybox:
        shutil.copy(busybox, rootfs + "/bin/busybox")
        os.symlink("busybox", rootfs + "/bin/sh")
    shutil.copy(ctx.tools + ("/workload-static" if os.path.exists(ctx.tools + "/workload-static") else "/workload"),
                rootfs + "/workload")
    tools = [t for t in ONESHOT_TOOLS if FREEZER or t[0] not in ("c1", "icebox1")]
    out = {"tools": {k: label for k, label, _ in tools}, "workloads": [], "missing": missing,
           "versions": {"lxc": tool_version(["lxc-freeze", "--version"]), "runc": tool_version(["runc", "--version"]),
                        "busybox": tool_version([busybox or "busybox"]), "python": tool_version([SERVER_PYTHON, "--version"]),
                        "icebox": tool_version([ctx.icebox, "--version"])},
           "load_start": loadavg(), "cpu_pressure_start": cpu_pressure()}
    starts = [("/bin/true", ["/bin/true"]), ("icebox --version", [ctx.icebox, "--version"])]
    if "lxc" not in missing:
        starts.append(("lxc-freeze --version", ["lxc-freeze", "--version"]))
    if "runc" not in missing:
        starts.append(("runc --version", ["runc", "--version"]))
    out["start"] = {label: [] for label, _ in starts}

    for w in ONESHOT_WORKLOADS:
        key, label, _, tasks, rounds = w
        rounds = max(3, int(round(rounds * ctx.scale)))
        room, limit = task_headroom()
        if room < 5 * tasks + 100:
            out["workloads"].append({"key": key, "label": label, "skipped": f"needs {5 * tasks} tasks, the host allows {room} more ({limit})"})
            continue
        setup = OneshotSetup(ctx, work, rootfs, key)
        row = {"key": key, "label": label, "rounds": rounds, "tools": {}, "errors": {}, "freezer": {}}
        n_cleanups = len(ctx.cleanups)
        peers = {}
        try:
            for kind, start in (("plain", lambda: setup.plain(w, base_v2, base_v1)),
                                ("icebox2", lambda: setup.icebox(w, sess, "cgroup2")),
                                ("icebox1", lambda: setup.icebox(w, sess, "cgroup1")),
                                ("lxc", lambda: setup.lxc(w)), ("runc", lambda: setup.runc(w))):
                if kind == "icebox1" and not FREEZER:
                    continue
                if kind in missing:
                    row["errors"][kind] = missing[kind]
                    continue
                try:
                    peers[kind] = start()
                except Exception as e:  # noqa: BLE001 - that tool's rows say why; the others run
                    row["errors"][kind] = str(e)
                    log(f"oneshot {key}: {kind} could not be set up: {e}")
            active = []
            for tool, _, on in tools:
                if on not in peers:
                    row["errors"].setdefault(tool, row["errors"].get(on, f"no {on} instance"))
                    continue
                fz, th, env = oneshot_commands(ctx, tool, peers[on], sess)
                active.append((tool, peers[on], fz, th, env))
                row["tools"][tool] = {k: [] for k in ("freeze", "thaw", "get", "op_freeze", "op_thaw", "settle")}
                row["tools"][tool]["answered_while_frozen"] = 0
            if key == "idle1":
                active += [("start:" + lab, None, argv, None, None) for lab, argv in starts]

            def one(tool, peer, fz, th, env, record):
                if peer is None:  # a process start alone
                    wall, _, _ = run_oneshot(fz)
                    if record:
                        out["start"][tool[6:]].append(wall)
                    return
                s = row["tools"][tool]
                fspan, tspan = [], []
                fw, _, fo = run_oneshot(fz, env, span=fspan)
                if tool not in row["freezer"]:
                    row["freezer"][tool] = freezer_state(peer)
                sock, early = pending_get(peer["port"]) if w[2] is None else (None, False)
                try:
                    tw, got, to = run_oneshot(th, env, pending=sock, span=tspan)
                finally:
                    if sock:
                        sock.close()
                settle = run_bare(ctx.tools + "/bare", "settle", peer["dir"])["settle"]
                phases = phases_of(sess.new_events(), peer["name"], fspan, tspan) if tool.startswith("icebox") else {}
                if record:
                    s["freeze"].append(fw)
                    s["thaw"].append(tw)
                    s["settle"].append(settle)
                    if got is not None:
                        s["get"].append(got)
                    s["answered_while_frozen"] += early
                    for k, v in phases.items():
                        s.setdefault(k, []).append(v)
                    for op, text in (("op_freeze", fo), ("op_thaw", to)):
                        if text.split()[:1] in (["freeze"], ["thaw"]):
                            s[op].append(int(text.split()[1]))
            # A warm-up round (not recorded), then the rounds, each tool once per round in a new random
            # order (the same for a given round: seeded with its number). Rotated by one each round, as
            # until session 29, every tool came right after the same neighbour in all but one round of
            # N: icebox's cgroup2 app after runc, a Go program whose threads ran on both CPUs, `kill`
            # after a small C one-shot, icebox's cgroup1 app right after a request to the same daemon.
            for i in range(rounds + 1):
                order = random.Random(i).sample(active, len(active))
                for t in order:
                    try:
                        one(*t, record=i > 0)
                    except Exception as e:  # noqa: BLE001 - that tool stops; the others go on
                        log(f"oneshot {key}: {t[0]}: {e}")
                        row["errors"][t[0]] = str(e)
                        active.remove(t)
                        if t[1] is not None:
                            thaw_anyhow(t[1])  # the other tools on the same instance go on
            row["stats"] = {tool: {k: stats(v) for k, v in s.items() if isinstance(v, list) and v}
                            for tool, s in row["tools"].items()}
            c2 = row["stats"].get("c2", {})
            row["ratios"] = {tool: {op: st[op]["median"] / max(1, c2[op]["median"]) for op in ("freeze", "thaw", "get")
                                    if op in st and op in c2}
                             for tool, st in row["stats"].items()}
            log(f"oneshot {key}: " + "; ".join(
                f"{tool} {fmt(st['freeze']['median'])}/{fmt(st['thaw']['median'])}"
                + (f"/{fmt(st['get']['median'])}" if 'get' in st else "") for tool, st in row["stats"].items() if "freeze" in st))
        finally:
            while len(ctx.cleanups) > n_cleanups:
                ctx.cleanups.pop()()
        out["workloads"].append(row)
    out["start_stats"] = {lab: stats(v) for lab, v in out["start"].items() if v}
    out["load_end"] = loadavg()
    return out

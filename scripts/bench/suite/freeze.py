"""Part freeze: freeze/thaw latency as the work grows (1..1000 processes, 10..10000 threads, idle
and busy), every backend, icebox's daemon-side figure against bare.c, interleaved pair by pair."""
import os

from .command import run_bare
from .host import CPU_V1, log, pids_of, remove_cgroup_tree, task_headroom, threads_of, write
from .samples import fmt, stats


WORKLOADS = [("procs", 1), ("procs", 10), ("procs", 100), ("procs", 1000),
             ("threads", 10), ("threads", 1000), ("threads", 10000)]


def rounds_for(n, mode, scale):
    # Up to 10 tasks, more rounds: those figures are tens of µs, which one preemption by a task the
    # thaw woke, or one wake-up of an idle vCPU, moves by as much (perf: both icebox and bare are
    # preempted by the thawed tasks on their CPU), and a round of them costs milliseconds.
    # Twice what they were until session 29: such samples are bimodal for both tools (~50 µs, or
    # ~150 µs when a vCPU must be woken first), and with 60 rounds a median fell in either mode by
    # the luck of the split (10 idle processes on v1: bare slow in 17 of 60 rounds, icebox in 33,
    # 2.10x; the same row alone three times, 0.53-0.78x); 8 rounds of 1000 busy processes spread
    # over 3.2-7.9 ms for both; and 2 rounds of 10000 busy threads on SIGSTOP gave icebox 0.43x
    # bare in one run and 1.70x in the next (bare 300 and 183 ms, icebox 128 and 311 ms).
    r = 120 if n <= 10 else 60 if n <= 100 else 30 if n <= 1000 else 5
    if mode == "busy":  # each thaw is followed by a wait until every spinner has run: seconds for 10000
        r = 80 if n <= 10 else 30 if n <= 100 else 16 if n <= 1000 else 4
    return max(2, int(round(r * scale)))


def part_freeze(ctx):
    sess = ctx.session("freeze")
    busy_args, busy_how = [], "SCHED_IDLE"
    if CPU_V1:
        cg = f"{CPU_V1}/icebox-bench-{os.getpid()}-busy"
        os.makedirs(cg, exist_ok=True)
        ctx.cleanups.append(lambda: remove_cgroup_tree(cg))
        write(cg + "/cpu.shares", "2")
        busy_args, busy_how = ["-c", cg + "/cgroup.procs"], "v1 cpu cgroup with cpu.shares=2"
    else:
        busy_args = ["-I"]
    busy_args += ["-y", "50"]
    rows = []
    for mode in ctx.modes:
        for kind, n in ctx.workloads:
            need = n + 50
            room, limit = task_headroom()
            if room < need:
                why = f"needs {n} tasks, the host allows {room} more ({limit})"
                log(f"skip {kind} {n} {mode}: {why}")
                rows.append({"kind": kind, "size": n, "mode": mode, "skipped": why})
                continue
            for backend in ctx.backends:
                rows.append(one_workload(ctx, sess, kind, n, mode, backend, busy_args if mode == "busy" else []))
    return {"interval_us": ctx.interval_us, "busy_scheduling": busy_how, "rows": rows}


def one_workload(ctx, sess, kind, n, mode, backend, extra):
    name = f"{kind[0]}{n}-{mode}-{backend}"
    row = {"kind": kind, "size": n, "mode": mode, "backend": backend, "name": name}
    cmd = [ctx.tools + "/workload", *extra, kind, str(n), mode]
    r, t0, t1 = sess.run("launch", "--backend", backend, "--ready", "notify", "--ready-timeout", "120s",
                         "--background-signal", "none", "--grace", "0", name, "--", *cmd, check=False, timeout=180)
    if r.returncode != 0:
        row["skipped"] = f"launch failed (exit {r.returncode}): {r.stderr.strip()[:300]}"
        log(f"{name}: {row['skipped']}")
        return row
    row["launch_wall_ns"] = t1 - t0
    try:
        rec = sess.ps()[name]
        target = rec["freezer_v1"] if backend == "cgroup1" else rec["cgroup"]
        pids = pids_of(rec["cgroup"])
        row.update(processes=len(pids), threads=threads_of(pids), cgroup=rec["cgroup"], freezerV1=rec.get("freezer_v1"))
        sess.new_events()
        bare = ctx.tools + "/bare"
        row["settle_after_launch_ns"] = run_bare(bare, "settle", rec["cgroup"])["settle"]
        rounds = rounds_for(n, mode, ctx.scale)
        s = {k: [] for k in ("bare_freeze", "bare_thaw", "ice_freeze", "ice_thaw", "suspend_wall", "resume_wall",
                             "settle_after_bare", "settle_after_ice")}

        def bare_pair():
            out = run_bare(bare, backend, target, "1", interval_us=ctx.interval_us)  # freeze, thaw, settle
            s["bare_freeze"].append(out["freeze"])
            s["bare_thaw"].append(out["thaw"])
            s["settle_after_bare"].append(out["settle"])

        def ice_pair():
            _, a, b = sess.run("suspend", name, timeout=180)
            _, _, c = sess.run("resume", name, timeout=180)
            evs = [e for e in sess.new_events() if e.get("app") == name]
            fz = [e["duration_ns"] for e in evs if e["event"] == "freeze"]
            th = [e["duration_ns"] for e in evs if e["event"] == "thaw"]
            if len(fz) != 1 or len(th) != 1:
                raise RuntimeError(f"{name}: expected one freeze and one thaw event, got {[e['event'] for e in evs]}")
            s["ice_freeze"].append(fz[0])
            s["ice_thaw"].append(th[0])
            s["suspend_wall"].append(b - a)
            s["resume_wall"].append(c - b)
            # every thread runs again before the next freeze (see bare.c: settle)
            s["settle_after_ice"].append(run_bare(bare, "settle", rec["cgroup"])["settle"])

        for i in range(rounds):
            for step in ((bare_pair, ice_pair) if i % 2 == 0 else (ice_pair, bare_pair)):
                step()
        row["rounds"] = rounds
        row["samples"] = s
        row["stats"] = {k: stats(v) for k, v in s.items()}
        st = row["stats"]
        row["ratio_freeze"] = st["ice_freeze"]["median"] / max(1, st["bare_freeze"]["median"])
        row["ratio_thaw"] = st["ice_thaw"]["median"] / max(1, st["bare_thaw"]["median"])
        log(f"{name:24} {row['threads']:>6} tasks  freeze bare {fmt(st['bare_freeze']['median']):>9} icebox "
            f"{fmt(st['ice_freeze']['median']):>9} ({row['ratio_freeze']:.2f}x)   thaw bare {fmt(st['bare_thaw']['median']):>9} "
            f"icebox {fmt(st['ice_thaw']['median']):>9} ({row['ratio_thaw']:.2f}x)   [{rounds} rounds]")
    except Exception as e:  # noqa: BLE001 - one workload failing must not stop the suite
        row["error"] = str(e)
        log(f"{name}: error: {e}")
    finally:
        r, a, b = sess.run("evict", name, check=False, timeout=120)
        row["evict_wall_ns"] = b - a
    return row

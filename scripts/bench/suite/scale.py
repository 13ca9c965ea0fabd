"""Part scale: one daemon with 1, 100 and 1000 apps: launch, ps, suspend and resume all, RSS,
descriptors, registry size, idle CPU."""
import os
import time

from .command import timed
from .host import log, mono, proc_stat, proc_status
from .samples import fmt, stats


def part_scale(ctx):
    sess = ctx.session("scale")
    levels = [1, 100, 1000] if ctx.scale >= 1 else [1, 100]
    idle_s = 10 if ctx.scale >= 1 else 2
    # The apps get a small environment (the client's is copied into every app record, and the
    # daemon rewrites every record on each state change: see RESULTS.md).
    keep = ("PATH", "HOME", "LANG", "ICEBOX_RUNTIME_DIR", "ICEBOX_STATE_DIR", "ICEBOX_CGROUP_ROOT")
    env = {k: v for k, v in sess.env.items() if k in keep}
    tick = os.sysconf("SC_CLK_TCK")
    launch_walls, out = [], {"app": ["sleep", "100000"], "app_environment": sorted(env), "levels": []}
    names = []
    for level in levels:
        while len(names) < level:
            name = f"s{len(names)}"
            _, a, b = sess.run("launch", "--background-signal", "none", "--grace", "0", name, "--", "sleep", "100000", env=env)
            names.append(name)
            launch_walls.append(b - a)
        daemon = sess.daemon_pid()
        lv = {"apps": level}
        lv["ps_wall_ns"] = stats([timed([ctx.icebox, "ps"], env=env) for _ in range(5)])
        lv["ps_json_wall_ns"] = stats([timed([ctx.icebox, "ps", "--json"], env=env) for _ in range(3)])
        sess.new_events()
        _, a, b = sess.run("suspend", *names, env=env, timeout=600)
        lv["suspend_all_wall_ns"] = b - a
        evs = [e for e in sess.new_events() if e["event"] == "freeze"]
        lv["suspend_all_freeze_ns"] = stats([e["duration_ns"] for e in evs])
        gaps = [y["monotonic_ns"] - x["monotonic_ns"] for x, y in zip(evs, evs[1:])]
        lv["suspend_all_gap_ns"] = stats(gaps)
        _, a, b = sess.run("resume", *names, env=env, timeout=600)
        lv["resume_all_wall_ns"] = b - a
        evs = [e for e in sess.new_events() if e["event"] == "thaw"]
        lv["resume_all_thaw_ns"] = stats([e["duration_ns"] for e in evs])
        if level == 100:
            sus, res = [], []
            for nm in names:
                sus.append(timed([ctx.icebox, "suspend", nm], env=env))
            for nm in names:
                res.append(timed([ctx.icebox, "resume", nm], env=env))
            lv["suspend_each_wall_ns"] = stats(sus)
            lv["resume_each_wall_ns"] = stats(res)
            lv["suspend_each_total_ns"] = sum(sus)
            lv["resume_each_total_ns"] = sum(res)
            sess.new_events()
        lv["daemon_rss_kib"] = int(proc_status(daemon, "VmRSS").split()[0])
        lv["daemon_fds"] = len(os.listdir(f"/proc/{daemon}/fd"))
        lv["daemon_threads"] = int(proc_status(daemon, "Threads"))
        reg = sess.work + "/state/registry"  # one JSON file per app
        lv["registry_bytes"] = sum(os.path.getsize(os.path.join(reg, f)) for f in os.listdir(reg)) if os.path.isdir(reg) else 0
        time.sleep(1)  # let the daemon finish whatever followed its last reply
        before = proc_stat(daemon)
        time.sleep(idle_s)
        after = proc_stat(daemon)
        lv["idle_seconds"] = idle_s
        lv["idle_cpu_ticks"] = after["utime"] + after["stime"] - before["utime"] - before["stime"]
        lv["clock_ticks_per_s"] = tick
        out["levels"].append(lv)
        log(f"scale {level:5} apps: suspend all {fmt(lv['suspend_all_wall_ns'])} ({fmt(lv['suspend_all_wall_ns'] / level)}/app), "
            f"resume all {fmt(lv['resume_all_wall_ns'])}, ps {fmt(lv['ps_wall_ns']['median'])}, RSS {lv['daemon_rss_kib']} KiB, "
            f"{lv['daemon_fds']} fds, registry {lv['registry_bytes']} B, idle CPU {lv['idle_cpu_ticks']} ticks/{idle_s}s")
    out["launch_wall_ns"] = launch_walls
    t = mono()
    sess.stop_daemon(env=env, timeout=600)
    out["stop_all_wall_ns"] = mono() - t
    log(f"scale daemon --stop with {len(names)} apps: {fmt(out['stop_all_wall_ns'])}")
    return out

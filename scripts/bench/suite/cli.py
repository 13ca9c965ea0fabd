"""Part cli: suspend and resume as a user types them (the whole command's wall time, split with
the daemon's event timestamps) against /bin/kill -STOP/-CONT; icebox --version and ps."""
from .command import timed
from .host import log
from .session import PHASES, phases_of
from .samples import fmt, stats


def part_cli(ctx):
    sess = ctx.session("cli")
    rounds = max(5, int(60 * ctx.scale))
    out = {"rounds": rounds, "backends": {}, "commands": {}}
    for backend in ctx.backends:
        name = f"cli-{backend}"
        sess.run("launch", "--backend", backend, "--ready", "notify", "--background-signal", "none", "--grace", "0", name, "--",
                 ctx.tools + "/workload", "procs", "1", "idle")
        pid = sess.ps()[name]["pid"]
        sess.new_events()
        keys = ("suspend_wall", "resume_wall", "kill_stop_wall", "kill_cont_wall") + PHASES
        s = {k: [] for k in keys}
        for _ in range(rounds):
            _, a, b = sess.run("suspend", name)
            _, _, c = sess.run("resume", name)
            phases = phases_of(sess.new_events(), name, (a, b), (b, c))
            if not phases:
                raise RuntimeError(f"cli {backend}: the daemon logged no freeze or thaw event for a suspend and resume")
            s["suspend_wall"].append(b - a)
            s["resume_wall"].append(c - b)
            for k, v in phases.items():
                s[k].append(v)
            s["kill_stop_wall"].append(timed(["/bin/kill", "-STOP", str(pid)]))
            s["kill_cont_wall"].append(timed(["/bin/kill", "-CONT", str(pid)]))
        st = {k: stats(v) for k, v in s.items()}
        out["backends"][backend] = {"samples": s, "stats": st}
        log(f"cli {backend:8} suspend {fmt(st['suspend_wall']['median'])} (daemon freeze {fmt(st['ice_freeze']['median'])}, "
            f"kill -STOP {fmt(st['kill_stop_wall']['median'])})  resume {fmt(st['resume_wall']['median'])} "
            f"(daemon thaw {fmt(st['ice_thaw']['median'])}, kill -CONT {fmt(st['kill_cont_wall']['median'])})")
    # plain commands, with the cli-* apps still running (ps lists 3 apps)
    for label, argv in (("/bin/true (process spawn floor)", ["/bin/true"]),
                        ("icebox --version", [ctx.icebox, "--version"]),
                        ("icebox ps", [ctx.icebox, "ps"]),
                        ("icebox ps --json", [ctx.icebox, "ps", "--json"])):
        samples = [timed(argv, env=sess.env) for _ in range(rounds)]
        out["commands"][label] = {"samples": samples, "stats": stats(samples)}
        log(f"cli {label}: {fmt(stats(samples)['median'])}")
    for backend in ctx.backends:
        sess.run("evict", f"cli-{backend}", check=False)
    return out

"""The icebox benchmark suite's driver. Run it through scripts/bench/run, which installs what it
needs, builds (or takes $ICEBOX_BIN) and compiles bare.c and workload.c first.

Parts (each with its own daemon, runtime/state directories and cgroup root, all removed at the end):
  freeze   freeze/thaw latency as the work grows (1..1000 processes, 10..10000 threads, idle and
           busy), every backend side by side, icebox (daemon-side figure) against bare.c (the
           kernel operation alone), interleaved pair by pair
  cli      suspend/resume as a user types them (wall time of the whole command) against the
           daemon-side figure and against /bin/kill -STOP/-CONT; icebox --version and ps
  servers  hot resume against cold start on real servers through `icebox bench`
  oneshot  one command per freeze or thaw, as a script would run it, side by side: a C one-shot
           (bare.c once), /bin/kill -STOP/-CONT (and confirmed), lxc-freeze/unfreeze, runc
           pause/resume and icebox suspend/resume on the same workloads (1 idle process, 100
           processes, 1000 threads, python3 -m http.server with a GET pending while frozen),
           interleaved round by round; process start-up alone
  scale    one daemon with 1, 100 and 1000 apps: launch, ps, suspend/resume all, RSS, idle CPU

Writes RESULTS.md, results.json and *.png to --out (default benchmarks/). Progress goes to stderr.
A run of some parts (--only) keeps the other parts' results from the results.json already there.
`python3 scripts/bench/suite --report-only [--out DIR]` measures nothing: it redraws the plots and
rewrites RESULTS.md from DIR/results.json.
"""
import argparse
import datetime
import json
import os
import platform
import signal
import subprocess
import sys
import time

if not __package__:  # run as `python3 scripts/bench/suite`: the package is imported from its parent
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from suite.cli import part_cli  # noqa: E402 - after the path above
from suite.context import Context  # noqa: E402
from suite.freeze import WORKLOADS, part_freeze  # noqa: E402
from suite.host import CG2, FREEZER, T0, cpu_pressure, loadavg, log, read, settle_cpus  # noqa: E402
from suite.oneshot import part_oneshot  # noqa: E402
from suite.plots import plot  # noqa: E402
from suite.report import write_report  # noqa: E402
from suite.scale import part_scale  # noqa: E402
from suite.servers import part_servers  # noqa: E402
from suite.session import check_stop_flag  # noqa: E402

# The parts in the order they run, each a function of the run's context returning its results.
PARTS = {"freeze": part_freeze, "cli": part_cli, "oneshot": part_oneshot, "servers": part_servers, "scale": part_scale}
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def merged_with_earlier(results, parts, path):
    """A run of some parts (--only) keeps the other parts' results from the earlier results.json:
    its meta stays the report's, and this run's meta goes under meta.later_runs, by part."""
    if set(parts) == set(PARTS) or not os.path.exists(path):
        return results
    try:
        with open(path) as f:
            earlier = json.load(f)
    except (OSError, ValueError) as e:
        log(f"{path}: unreadable ({e}): the report holds only this run's parts")
        return results
    merged = dict(earlier)
    for part in parts:
        merged.pop(part, None)
        merged.pop(part + "_error", None)
        for k in (part, part + "_error"):
            if k in results:
                merged[k] = results[k]
    meta = dict(earlier["meta"])
    later = {k: v for k, v in meta.get("later_runs", {}).items() if k not in parts}
    run = {k: v for k, v in results["meta"].items() if k not in ("cgroup_mode", "backends", "cpus", "cpu_model")}
    later.update({part: run for part in parts})
    meta["later_runs"] = later
    merged["meta"] = meta
    return merged


def main():
    ap = argparse.ArgumentParser(prog="scripts/bench/suite", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tools", help="directory holding the compiled bare and workload")
    ap.add_argument("--icebox", default=os.environ.get("ICEBOX_BIN"), help="the icebox binary (default $ICEBOX_BIN)")
    ap.add_argument("--out", default=os.path.join(REPO, "benchmarks"), help="where RESULTS.md, results.json, *.png go")
    ap.add_argument("--only", default=",".join(PARTS), help="comma-separated parts: " + ",".join(PARTS))
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the round counts (e.g. 0.3 for a quick try)")
    ap.add_argument("--interval-us", type=int, default=20, help="bare's re-read interval (µs)")
    ap.add_argument("--workloads", help="freeze part only: KIND:N,... of " + ",".join(f"{k}:{n}" for k, n in WORKLOADS)
                    + " (default all), for a quick look at some rows")
    ap.add_argument("--modes", default="idle,busy", help="freeze part only: idle, busy or both (default)")
    ap.add_argument("--backends", help="freeze part only: comma-separated backends (default every one the host has)")
    ap.add_argument("--report-only", action="store_true",
                    help="measure nothing: redraw the plots and rewrite RESULTS.md from --out's results.json")
    args = ap.parse_args()
    if args.report_only:
        with open(os.path.join(args.out, "results.json")) as f:
            results = json.load(f)
        pngs = plot(results, args.out)
        write_report(args.out, results, pngs, keep_appended=True)
        return 0
    if not args.tools:
        sys.exit("scripts/bench/suite: --tools DIR is required (scripts/bench/run compiles bare and workload there)")
    if os.geteuid() != 0:
        sys.exit("scripts/bench/run: needs root (cgroups, freezers)")
    if not args.icebox or not os.access(args.icebox, os.X_OK):
        sys.exit("scripts/bench/run: no icebox binary (set ICEBOX_BIN)")
    if not CG2:
        sys.exit("scripts/bench/run: no cgroup2 mount in /proc/self/mountinfo")
    parts = [p for p in args.only.split(",") if p]
    for p in parts:
        if p not in PARTS:
            sys.exit(f"unknown part {p!r} (parts: {', '.join(PARTS)})")

    def on_signal(signum, _frame):
        log(f"signal {signum}: stopping; cleaning up (apps, daemons, cgroups, temporary directories)")
        raise SystemExit(128 + signum)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)

    ctx = Context(os.path.abspath(args.icebox), args.tools, args.scale, args.interval_us)
    check_stop_flag(ctx.icebox)
    ctx.backends = ["cgroup2", "cgroup1", "signal"] if FREEZER else ["cgroup2", "signal"]
    if args.backends:
        ctx.backends = [b for b in ctx.backends if b in args.backends.split(",")]
    ctx.workloads = WORKLOADS
    if args.workloads:
        wanted = args.workloads.split(",")
        ctx.workloads = [(k, n) for k, n in WORKLOADS if f"{k}:{n}" in wanted]
        if len(ctx.workloads) != len(wanted):
            sys.exit(f"scripts/bench/suite: --workloads {args.workloads}: each must be one of " + ",".join(f"{k}:{n}" for k, n in WORKLOADS))
    ctx.modes = [m for m in args.modes.split(",") if m in ("idle", "busy")]
    version = subprocess.run([ctx.icebox, "--version"], capture_output=True, text=True).stdout.strip()
    cpu_model = next((l.split(":", 1)[1].strip() for l in read("/proc/cpuinfo").splitlines() if l.startswith("model name")), "?")
    results = {"meta": {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "kernel": platform.release(), "cpus": os.cpu_count(), "cpu_model": cpu_model,
        "load_start": loadavg(), "icebox_version": version,
        "cpu_pressure_start": cpu_pressure(),
        "icebox_binary": ctx.icebox, "backends": ctx.backends, "parts": parts, "scale": ctx.scale,
        "cgroup_mode": "hybrid cgroups (cgroup2 at %s, v1 freezer at %s)" % (CG2, FREEZER) if FREEZER else f"cgroup2 at {CG2}",
        "python": platform.python_version()}}
    log(f"icebox benchmarks: {version}, kernel {platform.release()}, {os.cpu_count()} CPUs, parts {', '.join(parts)}")
    ok = True
    results["meta"]["settle_s"] = {}
    try:
        for part, fn in PARTS.items():
            if part not in parts:
                continue
            waited = settle_cpus()
            results["meta"]["settle_s"][part] = waited
            log(f"== {part} (after {waited:.0f} s for the CPUs to settle)")
            t = time.monotonic()
            try:
                results[part] = fn(ctx)
            except Exception as e:  # noqa: BLE001 - the other parts still run; the error is reported
                ok = False
                log(f"{part}: failed: {e}")
                results[part + "_error"] = str(e)
            finally:
                ctx.close_all()
            results["meta"][f"{part}_seconds"] = round(time.monotonic() - t, 1)
    finally:
        ctx.close_all()
    results["meta"]["load_end"] = loadavg()
    results["meta"]["duration_s"] = round(time.monotonic() - T0, 1)
    results = merged_with_earlier(results, parts, os.path.join(args.out, "results.json"))
    os.makedirs(args.out, exist_ok=True)
    pngs = plot(results, args.out)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    write_report(args.out, results, pngs, keep_appended=set(parts) != set(PARTS))
    log(f"done in {results['meta']['duration_s']:.0f} s: {args.out}/RESULTS.md, results.json, "
        + ", ".join(os.path.basename(p) for p in pngs))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

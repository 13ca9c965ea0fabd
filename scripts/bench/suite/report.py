"""RESULTS.md: the Markdown report of a run's results.json, part by part."""
import os
import statistics

from .host import read
from .oneshot_peers import SERVER_PYTHON
from .servers import bench_export
from .samples import fmt
from .verdict import REASONS, likely_reason, misses_target


def later_run_note(results, part):
    """One sentence on when a part measured by a later `--only` run was measured, and the load then."""
    run = results["meta"].get("later_runs", {}).get(part)
    if not run:
        return []
    return [f"Measured on {run['date']} by `scripts/bench/run --only {','.join(run['parts'])}`"
            f"{'' if run.get('scale', 1) == 1 else ' --scale ' + str(run['scale'])} ({run['icebox_version']}, kernel "
            f"{run['kernel']}), not in the run above: load average {run['load_start']} at the start, "
            f"{run.get('load_end', '?')} at the end; CPU pressure (some, avg10) {run['cpu_pressure_start']}.", ""]


def images(pngs, word):
    """The Markdown images of the plots whose names hold `word`."""
    return [f"![{os.path.basename(p)}]({os.path.basename(p)})" for p in pngs if word in p]


LOADED_NOTE = (" **The machine was loaded** (other work took the CPUs most of the time): absolute figures are "
               "inflated and jumpy, a few-millisecond median moves by up to 2× from one run to the next; the ratios "
               "between tools measured interleaved in one run are what to compare, and a ratio from one loaded run "
               "is not a verdict (every sample is in results.json).")


def pressure(text):
    """CPU pressure as recorded ("12.34%"), as a number; 0 when not known."""
    try:
        return float(text.rstrip("%"))
    except (AttributeError, ValueError):
        return 0.0


def settled(results, part):
    """", after N s waiting for the CPUs to settle" when the run waited before the part."""
    waited = part_meta(results, part).get("settle_s", {}).get(part)
    return f", after {waited:.0f} s waiting for the CPUs to settle" if waited and waited >= 2 else ""


def part_meta(results, part):
    """The meta of the run that measured a part: a later --only run's, or the report's own."""
    return results["meta"].get("later_runs", {}).get(part, results["meta"])


def servers_bare_markdown(results, sv):
    """The bare hot/cold baseline beside icebox bench's cgroup2 figures for the same server."""
    if not sv.get("bare"):
        return []
    L = ["### The bare baseline: the same servers with nothing in between", "",
         "Each round is one run of icebox bench without icebox: the server spawned directly into a cgroup of the "
         "benchmark's own → first GET answered (cold; probed on icebox bench's schedule, 50 µs doubling to 10 ms); "
         "once at rest (its CPU time grows by less than 5% of a 2 ms window, as icebox bench waits before its suspend), "
         "frozen by the C one-shot (`bare once cgroup2 freeze`, an exec'd process); held 200 ms (icebox bench's "
         "`--hold`); thawed by `bare once cgroup2 thaw` → a GET answered (hot); killed. The hot GET alternates round "
         "by round: sent while frozen, from the thaw command's spawn to the answer (\"pending\"), or sent once the "
         "thaw command has exited, as icebox bench probes after `resume` (\"after\"). A fresh server each round, "
         f"so the hot GET is its second, as in icebox bench. {2 * sv['runs']} rounds, half before and half after "
         f"`icebox bench` on the same server, same command and interpreter. icebox's figures are `icebox bench`'s cold_start and hot_resume (cgroup2 backend; "
         f"its GET is sent after `resume` returns, by a client already running). hot/cold = median hot / median cold; "
         f"ratio of ratios = bare hot/cold ÷ icebox hot/cold: 1 when icebox keeps the kernel's whole hot/cold "
         f"advantage, below 1 when it gives some away (target ≥ 0.9)."
         + LOADED_NOTE * (pressure(part_meta(results, "servers")["cpu_pressure_start"]) > 20), "",
         "| server | bare cold | bare hot, pending GET | bare hot, GET after thaw | bare hot/cold (pending · after) | "
         "icebox cold | icebox hot | icebox hot/cold | ratio of ratios (pending · after) |",
         "|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for b in sv["bare"]:
        st = b["stats"]
        if b.get("error") or not all(k in st for k in ("cold", "hot_pending", "hot_after")):
            L.append(f"| {b['target']} | error: {b.get('error', 'no samples')[:300]} | | | | | | | |")
            continue
        ice = next((bench_export(e["export"])[0] for e in sv["results"]
                    if e["target"] == b["target"] and e["backend"] == "cgroup2" and "export" in e), {})
        cold, pend, after = st["cold"]["median"], st["hot_pending"]["median"], st["hot_after"]["median"]
        cells = [fmt(cold), fmt(pend), fmt(after), f"{pend / cold:.4f} · {after / cold:.4f}"]
        if "cold_start" in ice and "hot_resume" in ice:
            ir = ice["hot_resume"]["median"] / ice["cold_start"]["median"]
            rr = [(pend / cold) / ir, (after / cold) / ir]
            cells += [fmt(ice["cold_start"]["median"]), fmt(ice["hot_resume"]["median"]), f"{ir:.4f}",
                      " · ".join(f"**{r:.2f}**" if r < 0.9 else f"{r:.2f}" for r in rr)]
        else:
            cells += ["–", "–", "–", "no icebox bench figures"]
        L.append(f"| {b['target']} | " + " | ".join(cells) + " |")
    return L + [""]


def oneshot_markdown(results, os_, pngs):
    L = []
    freezers = {}
    for w in os_["workloads"]:
        for tool, f in w.get("freezer", {}).items():
            freezers.setdefault(tool, f)
    v = os_["versions"]
    L += ["Each freeze and each thaw is one command, spawned from Python as a script would (`subprocess.Popen`, "
          "then wait), timed from just before the spawn to its exit: process start-up included. Every tool acts on "
          "its own instance of the same workload (the statically linked `workload.c`, or "
          f"`{SERVER_PYTHON} -m http.server`): a plain one in a cgroup of the benchmark's own (v2, and v1 freezer), "
          "shared by the C one-shots and the kill rows; an LXC container whose init is the workload (`lxc-start -d`, "
          "root = busybox-static + the workload, /usr bind-mounted read-only for python3, the host's network); a runc "
          "container from the same root (`runc spec`, root, no network namespace); two icebox apps (`launch --grace 0 "
          "--background-signal none`, cgroup2 and cgroup1 backends; `suspend --grace 0`, `resume`). "
          f"Versions: lxc {v['lxc']}, {v['runc']}, {v['busybox'].split(' multi-call')[0]}, {v['python']}, {v['icebox']}.", "",
          f"Each round runs every tool once (freeze, then thaw, then `bare settle` until every thread has run again), "
          f"in a new random order each round; one warm-up round is not counted. On the HTTP workload a GET "
          f"is sent after the freeze command returns (and 5 ms are given for an answer that would show the server "
          f"was not frozen); \"thaw → GET\" is from the thaw command's spawn to the complete answer. Ratios are "
          f"against the C one-shot on cgroup2 (medians; **bold** > 1.5×); p95 in brackets. Load average "
          f"{os_['load_start']} at the start of this part, {os_['load_end']} at its end; CPU pressure (some, avg10) "
          f"{os_['cpu_pressure_start']} at its start{settled(results, 'oneshot')}."
          + LOADED_NOTE * (pressure(os_['cpu_pressure_start']) > 20), ""]
    used = {t: freezers[t] for t in ("lxc", "runc") if t in freezers}
    how = {"lxc": "LXC, with its own layout (`lxc.payload.NAME` in every hierarchy)",
           "runc": "runc, with its default cgroupfs driver (a `cgroupsPath`, no `--systemd-cgroup`)"}
    if used:
        text = ("Which freezer each tool used on this host (read right after its first freeze): "
                + "; ".join(f"{how[t]}: {f}" for t, f in used.items()) + ".")
        if any(f.startswith("v1") for f in used.values()):
            text += (" On a hybrid host (cgroup2 beside v1 controllers) they take the v1 freezer even though "
                     "cgroup.freeze is there.")
        if used.get("lxc", "").startswith("v1"):
            text += (" LXC's v1 freeze (5.0) writes FROZEN, reads freezer.state and, while the kernel still says "
                     "FREEZING, sleeps one second before reading it again (seen with strace): its freeze is a few ms, "
                     "or just over 1 s (see the p95s).")
        if any(f.startswith("v1") for f in used.values()):
            text += (" The icebox daemon of this part has an app on the v1 freezer, so it holds an empty v1 freezer "
                     "cgroup frozen throughout (`FreezerKeyHold.swift`): no tool's v1 freeze or thaw flips the "
                     "kernel's `freezer_active` static key here, which is kernel-wide.")
        L += [text, ""]
    for tool, why in os_.get("missing", {}).items():
        L += [f"**{tool} not measured:** {why}.", ""]

    def cell(st, ref, op):
        if op not in st:
            return "–"
        r = st[op]["median"] / max(1, ref[op]["median"]) if op in ref else None
        rt = "" if r is None else (f" · **{r:.2f}×**" if r > 1.5 else f" · {r:.2f}×")
        return f"{fmt(st[op]['median'])} ({fmt(st[op]['p95'])}){rt}"
    L += ["| workload | tool | freezer | freeze call | thaw call | thaw → GET answered |", "|---|---|---|--:|--:|--:|"]
    for w in os_["workloads"]:
        if w.get("skipped"):
            L.append(f"| {w['label']} | skipped: {w['skipped']} | | | | |")
            continue
        ref = w["stats"].get("c2", {})
        for tool, label in os_["tools"].items():
            st = w["stats"].get(tool)
            if not st or "freeze" not in st:
                L.append(f"| {w['label']} | {label} | | not measured: {w['errors'].get(tool, 'no samples')[:300]} | | |")
                continue
            early = w["tools"][tool].get("answered_while_frozen", 0)
            get = cell(st, ref, "get") + (f" ({early} answered while \"frozen\")" if early else "")
            L.append(f"| {w['label']} ({w['rounds']} rounds) | {label} | {w['freezer'].get(tool, '')} | "
                     f"{cell(st, ref, 'freeze')} | {cell(st, ref, 'thaw')} | {get} |")
    L += [""]
    starts = os_.get("start_stats", {})
    if starts:
        L += ["Process start-up alone, interleaved in the same rounds as the 1-process workload:", "",
              "| command | median | p95 |", "|---|--:|--:|"]
        L += [f"| `{lab}` | {fmt(st['median'])} | {fmt(st['p95'])} |" for lab, st in starts.items()]
        L += [""]
        idle = next((w["stats"] for w in os_["workloads"] if w["key"] == "idle1" and w.get("stats")), {})
        ice, c2 = idle.get("icebox2", {}), idle.get("c2", {})
        if "freeze" in ice and "freeze" in c2 and "icebox --version" in starts and "/bin/true" in starts:
            iv, tv = starts["icebox --version"]["median"], starts["/bin/true"]["median"]

            def signed(ns):  # a difference of medians can be negative
                return ("−" if ns < 0 else "") + fmt(abs(ns))
            L += [f"On the 1-process workload, `icebox suspend` takes {fmt(ice['freeze']['median'])} and `resume` "
                  f"{fmt(ice['thaw']['median'])}, of which starting the icebox binary at all (`icebox --version`) is "
                  f"{fmt(iv)}; the C one-shot takes {fmt(c2['freeze']['median'])} / {fmt(c2['thaw']['median'])}, of "
                  f"which starting a process (`/bin/true`) is {fmt(tv)}. Beyond start-up: icebox "
                  f"{signed(ice['freeze']['median'] - iv)} / {signed(ice['thaw']['median'] - iv)}, the C one-shot "
                  f"{signed(c2['freeze']['median'] - tv)} / {signed(c2['thaw']['median'] - tv)} (differences of medians).", ""]
    split = [(w, tool) for w in os_["workloads"] for tool in ("icebox2", "icebox1")
             if w.get("stats", {}).get(tool, {}).get("s_client_to_daemon") and "kill" in w["stats"]]
    if split:
        L += ["icebox's suspend in this table, split with the daemon's event timestamps as the CLI table's is (medians; "
              "`kill -STOP` from the same rounds). Where the walls of the two tables differ, this says which part "
              "differs:", "",
              "| workload | icebox app | suspend wall | → daemon | daemon before freeze | freeze | reply + exit | kill -STOP wall |",
              "|---|---|--:|--:|--:|--:|--:|--:|"]
        for w, tool in split:
            st = w["stats"][tool]
            L.append(f"| {w['label']} | {'cgroup2' if tool == 'icebox2' else 'cgroup1'} | {fmt(st['freeze']['median'])} | "
                     + " | ".join(fmt(st[k]["median"]) for k in ("s_client_to_daemon", "s_daemon_before_freeze", "ice_freeze",
                                                                  "s_reply_and_exit"))
                     + f" | {fmt(w['stats']['kill']['freeze']['median'])} |")
        L += [""]
    L += images(pngs, "oneshot") + [""]
    return L


def markdown(results, pngs):
    """RESULTS.md above the sections scripts/bench/run appends: the run, then each part measured."""
    m = results["meta"]
    L = ["# icebox benchmarks", "",
         f"Generated by `scripts/bench/run` on {m['date']}, in {m['duration_s']:.0f} s. "
         f"{m['icebox_version']}; kernel {m['kernel']}; {m['cpus']} CPUs ({m['cpu_model']}); "
         f"load average {m['load_start']} at the start, {m['load_end']} at the end (frozen v1 tasks sit in D state "
         f"and count in it: the suite's own 10000-thread runs push it into the thousands); CPU pressure (some, "
         f"avg10) {m['cpu_pressure_start']} at the start; {m['cgroup_mode']}.", "",
         "All figures are medians unless said otherwise; raw samples are in `results.json`. "
         "\"icebox\" freeze/thaw figures are the daemon's own (event log `duration_ns`: request written → kernel "
         "confirms); \"bare\" is `scripts/bench/bare.c` doing the same kernel operation with no icebox in between, "
         "on the same app, interleaved pair by pair with icebox's.", ""]
    for part, title, part_markdown in SECTIONS:
        if results.get(part):
            L += [f"## {title}", ""] + later_run_note(results, part) + part_markdown(results, results[part], pngs)
    return "\n".join(L)


def freeze_markdown(results, fr, pngs):
    L = [f"Workloads are `scripts/bench/workload.c` (N processes, or 1 process with N threads in all; idle = "
         f"pause(), busy = spinning, with a sched_yield() every 50 µs) launched with `--ready notify "
         f"--background-signal none`. Busy workloads run in a {fr['busy_scheduling']}, so the benchmark itself "
         f"still gets the CPU while they take every idle cycle. bare re-reads the kernel state after "
         f"{fr['interval_us']} µs, or 5% of the time elapsed, or 4× what one check costs, whichever is longest "
         f"(so it is within ~5% of the kernel and leaves the CPU to the tasks that must run to freeze). After every thaw, bare's or icebox's, the benchmark waits "
         f"until every thread of the app has run again (`bare settle`): a thawed task counts as frozen until it "
         f"runs, and a freeze asked for before then would find it frozen already. Ratio = icebox median / bare "
         f"median; **bold** where the figure misses issue 8's target: at most 1.2× bare where bare takes 200 µs "
         f"or more (1.3× for the SIGSTOP backend), at most bare + 20 µs where it takes less. CLI columns are the wall time of the whole `icebox suspend`/`resume` "
         f"command. The last column is how long after `icebox resume` returned every thread had run again "
         f"(the kernel confirms a thaw when the tasks are woken, not when they have run; an upper bound, as it "
         f"includes reading /proc for every thread, about 0.3 s for 10000). The host is a "
         f"2-vCPU microVM: waking an idle vCPU goes through the hypervisor, which makes sub-millisecond "
         f"figures jumpy from one round to the next (min, max, p95 and every sample are in results.json). "
         f"The v1 rows run while the daemon holds an empty v1 freezer cgroup of its own frozen, as it does "
         f"whenever it has an app on the v1 freezer (`FreezerKeyHold.swift`): neither icebox's write nor bare's "
         f"then flips the kernel's `freezer_active` static key, which otherwise patches kernel text with an "
         f"interrupt to every CPU at a first freeze and a last thaw (150–200 µs of each write here).", ""]
    L += ["| workload | mode | backend | tasks | rounds | bare freeze | icebox freeze | ratio | bare thaw | icebox thaw | ratio | CLI suspend | CLI resume | all threads ran again |",
          "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    flags = []
    for r in fr["rows"]:
        w = f"{r['size']} {'processes' if r['kind'] == 'procs' else 'threads'}" if r['size'] != 1 else "1 process"
        if "stats" not in r:
            L.append(f"| {w} | {r['mode']} | {r.get('backend', 'all')} | | | skipped: {r.get('skipped') or r.get('error')} | | | | | | | | |")
            continue
        st = r["stats"]

        def ratio(op):
            v, missed = r[f"ratio_{op}"], misses_target(r["backend"], st[f"bare_{op}"]["median"], st[f"ice_{op}"]["median"])
            return f"**{v:.2f}**" if missed else f"{v:.2f}"
        L.append(f"| {w} | {r['mode']} | {r['backend']} | {r['threads']} | {r['rounds']} | {fmt(st['bare_freeze']['median'])} | "
                 f"{fmt(st['ice_freeze']['median'])} | {ratio('freeze')} | {fmt(st['bare_thaw']['median'])} | "
                 f"{fmt(st['ice_thaw']['median'])} | {ratio('thaw')} | {fmt(st['suspend_wall']['median'])} | "
                 f"{fmt(st['resume_wall']['median'])} | {fmt(st['settle_after_ice']['median'])} |")
        # Judged here from the medians, so rows kept from an earlier partial run are judged alike.
        for op in ("freeze", "thaw"):
            b, i = st[f"bare_{op}"]["median"], st[f"ice_{op}"]["median"]
            if misses_target(r["backend"], b, i):
                sm = r.get("samples", {})
                key, detail = likely_reason(r["backend"], op, b, i, (sm.get(f"bare_{op}", []), sm.get(f"ice_{op}", [])))
                flags.append((key, f"{w} {r['mode']} {r['backend']} {op} {r[f'ratio_{op}']:.2f}× ({fmt(b)} → {fmt(i)}; {detail})"))
    L += [""]
    if flags:
        n = 2 * sum(1 for r in fr["rows"] if "stats" in r)
        L += [f"{len(flags)} of {n} figures miss the target. Grouped by their likely reason:", ""]
        for key, text in REASONS.items():
            cases = [c for k, c in flags if k == key]
            if cases:
                L += [f"- {text} ({len(cases)}: " + "; ".join(cases) + ")"]
        L += [""]
    for image in images(pngs, "freeze-thaw"):
        L += [image, ""]
    return L


def cli_markdown(results, cli, pngs):
    L = [f"Wall time of each command as a user runs it (Python `subprocess.run`, {cli['rounds']} rounds, an idle "
         f"1-process app). The suspend is split with the daemon's event timestamps (same CLOCK_MONOTONIC): client "
         f"start-up + connect + request until the daemon logs the notice; the daemon's work until the freeze "
         f"write; the freeze; the reply and the client's exit. `/bin/kill` only sends the signal (no "
         f"confirmation).", "",
         "| backend | suspend wall | → daemon | daemon before freeze | freeze | reply + exit | kill -STOP wall | resume wall | thaw | kill -CONT wall |",
         "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for b, d in cli["backends"].items():
        st = d["stats"]
        g = lambda k: fmt(st[k]["median"]) if st.get(k) else "–"  # noqa: E731
        L.append(f"| {b} | {g('suspend_wall')} | {g('s_client_to_daemon')} | {g('s_daemon_before_freeze')} | {g('ice_freeze')} | "
                 f"{g('s_reply_and_exit')} | {g('kill_stop_wall')} | {g('resume_wall')} | {g('ice_thaw')} | {g('kill_cont_wall')} |")
    L += ["", "| command | median | min | p95 |", "|---|--:|--:|--:|"]
    for label, d in cli["commands"].items():
        L.append(f"| `{label}` | {fmt(d['stats']['median'])} | {fmt(d['stats']['min'])} | {fmt(d['stats']['p95'])} |")
    L += [""] + images(pngs, "cli") + [""]
    return L


def servers_markdown(results, sv, pngs):
    L = []
    if sv.get("skipped"):
        return L + [f"Skipped: {sv['skipped']}.", ""]
    names = ("cold_start", "hot_resume", "freeze", "thaw", "suspend", "relaunch_after_eviction")
    L += [f"`icebox bench --ready http:http://127.0.0.1:PORT/ --runs {sv['runs']} --warmup 1 --hold 200ms "
          f"--background-signal none --grace 0 --backend B -- SERVER` (medians; every sample in results.json).", "",
          "| server | backend | " + " | ".join(names) + " | speedup (median) |",
          "|---|---|" + "--:|" * (len(names) + 1)]
    for e in sv["results"]:
        if "export" not in e:
            L.append(f"| {e['target']} | {e['backend']} | error: {e.get('error', '')[:200]} |" + " |" * len(names))
            continue
        res, sp = bench_export(e["export"])
        cells = [fmt(res[n]["median"]) if n in res else "–" for n in names]
        speedup = f"{sp:.1f}×" if isinstance(sp, (int, float)) else "–"
        L.append(f"| {e['target']} | {e['backend']} | " + " | ".join(cells) + f" | {speedup} |")
    return L + [""] + servers_bare_markdown(results, sv)


def scale_markdown(results, sc, pngs):
    L = [f"Apps are `{' '.join(sc['app'])}` (cgroup2 backend), launched one `icebox launch` at a time, the "
         f"daemon growing to each size in turn. They are given a small environment "
         f"({', '.join(sc['app_environment'])}): every app record carries its environment (for relaunch); a state "
         f"change rewrites only that app's record, once per turn of the daemon's loop. Idle CPU is the daemon's utime+stime over "
         f"{sc['levels'][0]['idle_seconds']} s with every app running and nothing asked of it.", "",
         "| apps | launch (median of the last 10) | ps wall | ps --json wall | suspend all (one command) | per app | freeze (median) | daemon time between freezes | resume all | per app | per-app commands (100 × suspend / resume) | daemon RSS | fds | registry (all files) | idle CPU |",
         "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    lw = sc["launch_wall_ns"]
    for lv in sc["levels"]:
        n = lv["apps"]
        last = statistics.median(lw[max(0, n - 10):n])
        each = (f"{fmt(lv['suspend_each_wall_ns']['median'])} / {fmt(lv['resume_each_wall_ns']['median'])} each"
                if "suspend_each_wall_ns" in lv else "")
        gap = fmt(lv["suspend_all_gap_ns"]["median"]) if lv.get("suspend_all_gap_ns") else "–"
        L.append(f"| {n} | {fmt(last)} | {fmt(lv['ps_wall_ns']['median'])} | {fmt(lv['ps_json_wall_ns']['median'])} | "
                 f"{fmt(lv['suspend_all_wall_ns'])} | {fmt(lv['suspend_all_wall_ns'] / n)} | "
                 f"{fmt(lv['suspend_all_freeze_ns']['median'])} | {gap} | {fmt(lv['resume_all_wall_ns'])} | "
                 f"{fmt(lv['resume_all_wall_ns'] / n)} | {each} | {lv['daemon_rss_kib'] / 1024:.1f} MiB | {lv['daemon_fds']} | "
                 f"{lv['registry_bytes'] / 1024:.0f} KiB | {lv['idle_cpu_ticks']} ticks / {lv['idle_seconds']} s |")
    L += ["", f"`icebox daemon --stop` with {sc['levels'][-1]['apps']} apps (terminates them all): {fmt(sc['stop_all_wall_ns'])}.", ""]
    L += images(pngs, "scale") + [""]
    return L

# The parts' sections in the report's order: the part, its heading, what writes the rest.
SECTIONS = (("freeze", "Freeze and thaw as the work grows", freeze_markdown),
            ("cli", "The CLI end to end", cli_markdown),
            ("oneshot", "One command per freeze or thaw: icebox beside its peers", oneshot_markdown),
            ("servers", "Hot resume against cold start on real servers (`icebox bench`)", servers_markdown),
            ("scale", "One daemon, many apps", scale_markdown))


# scripts/bench/run appends these sections to the RESULTS.md of a full run (memory-policy,
# lifecycle-latency); a partial run or --report-only keeps them from the RESULTS.md already there.
APPENDED_BY_RUN = "\n## Memory policy: eviction and compaction\n"


def write_report(out_dir, results, pngs, keep_appended):
    path = os.path.join(out_dir, "RESULTS.md")
    earlier = read(path, "")
    tail = earlier[earlier.find(APPENDED_BY_RUN):] if keep_appended and APPENDED_BY_RUN in earlier else ""
    with open(path, "w") as f:
        f.write(markdown(results, pngs) + tail)

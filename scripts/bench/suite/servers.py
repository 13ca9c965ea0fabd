"""Part servers: hot resume against cold start on real servers through `icebox bench`, beside a
bare baseline of the same servers (BareServer)."""
import json
import os
import shutil
import subprocess
import time

from .command import run_oneshot
from .host import CG2, free_port, log, mono, read, remove_cgroup_tree, write
from .http_probe import http_get_when_up, pending_get
from .samples import fmt, stats

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # scripts/bench, with HelloServer.java


NODE_SERVER = ("const http=require('http');"
               "http.createServer((q,s)=>s.end('ok\\n')).listen(+process.argv[1],'127.0.0.1')")


def bench_available(icebox):
    try:
        r = subprocess.run([icebox, "bench", "--help"], capture_output=True, text=True, timeout=30)
        return r.returncode == 0
    except OSError:
        return False


def bench_export(export):
    """The measurements of an `icebox bench --export-json` file by phase, medians in ns, and
    the speed-up. The export is in hyperfine's schema (seconds; icebox's keys: `phase`, and
    `speedup_median` under `icebox`); results.json files from before keep the older form
    (`name`, nanoseconds, `speedup_median` at the top)."""
    by_phase = {}
    for x in export.get("results", []):
        if "phase" in x:
            by_phase[x["phase"]] = dict(x, median=x["median"] * 1e9)
        else:
            by_phase[x["name"]] = x
    speedup = export.get("icebox", {}).get("speedup_median", export.get("speedup_median"))
    return by_phase, speedup


def part_servers(ctx):
    if not bench_available(ctx.icebox):
        log("servers: skipped: icebox bench not available in this build")
        return {"skipped": "icebox bench not available in this build"}
    sess = ctx.session("servers")
    runs = max(3, int(12 * ctx.scale))
    docroot = os.path.join(sess.work, "www")
    os.makedirs(docroot)
    write(docroot + "/index.html", "ok\n")
    targets = [("python3 -m http.server", lambda p: ["python3", "-m", "http.server", str(p), "--bind", "127.0.0.1",
                                                     "--directory", docroot], ctx.backends)]
    if shutil.which("node"):
        targets.append(("node http", lambda p: ["node", "-e", NODE_SERVER, str(p)], ["cgroup2"]))
    else:
        log("servers: node not installed: skipping the node server")
    if shutil.which("javac") and shutil.which("java"):
        jdir = os.path.join(ctx.tools, "java")
        os.makedirs(jdir, exist_ok=True)
        subprocess.run(["javac", "-d", jdir, os.path.join(HERE, "HelloServer.java")], check=True, timeout=300)
        targets.append(("java HttpServer", lambda p: ["java", "-XX:TieredStopAtLevel=1", "-cp", jdir, "HelloServer", str(p)],
                        ["cgroup2"]))
    else:
        log("servers: javac/java not installed: skipping the Java server")
    results, bare = [], []
    base_v2 = f"{CG2}/icebox-bench-{os.getpid()}-servers-bare"
    os.makedirs(base_v2)
    ctx.cleanups.append(lambda: remove_cgroup_tree(base_v2))
    for label, command, backends in targets:
        # the bare baseline (2 × runs rounds: one hot GET of each kind per icebox bench run), half of
        # its rounds before icebox bench and half after
        baseline = BareServer(ctx, f"{base_v2}/{len(bare)}", command)
        try:
            baseline.rounds(runs)
        except Exception as e:  # noqa: BLE001 - icebox bench still runs; the row says why
            baseline.error = str(e)
        for backend in backends:
            port = free_port()
            argv = command(port)
            jpath = os.path.join(sess.work, f"bench-{len(results)}.json")
            entry = {"target": label, "backend": backend, "command": argv, "runs": runs}
            t0 = mono()
            try:
                # --background-signal none: node handles SIGUSR1 (it starts its inspector), and a
                # notice would hold every suspend for the whole grace period
                r = subprocess.run([ctx.icebox, "bench", "--ready", f"http:http://127.0.0.1:{port}/", "--runs", str(runs),
                                    "--warmup", "1", "--hold", "200ms", "--background-signal", "none", "--grace", "0", "--backend", backend,
                                    "--export-json", jpath, "--", *argv],
                                   env=sess.env, capture_output=True, text=True, timeout=300)
                entry["wall_ns"] = mono() - t0
                if r.returncode != 0:
                    entry["error"] = f"exit {r.returncode}: {(r.stderr or r.stdout).strip()[:500]}"
                else:
                    entry["export"] = json.loads(read(jpath))
            except (subprocess.TimeoutExpired, ValueError, OSError) as e:
                entry["error"] = str(e)
            results.append(entry)
            if "error" in entry:
                log(f"servers {label} {backend}: error: {entry['error']}")
            else:
                res, speedup = bench_export(entry["export"])
                log(f"servers {label:24} {backend:8} cold {fmt(res.get('cold_start', {}).get('median'))}  hot "
                    f"{fmt(res.get('hot_resume', {}).get('median'))}  speedup {speedup}")
        try:
            if not baseline.error:
                baseline.rounds(runs)
        except Exception as e:  # noqa: BLE001
            baseline.error = str(e)
        bare.append(baseline.result(label))
        st = bare[-1]["stats"]
        log(f"servers {label:24} bare     cold {fmt(st.get('cold', {}).get('median'))}  hot (pending GET) "
            f"{fmt(st.get('hot_pending', {}).get('median'))}  hot (GET after thaw) {fmt(st.get('hot_after', {}).get('median'))}"
            + (f"  error: {baseline.error}" if baseline.error else ""))
    return {"runs": runs, "results": results, "bare": bare}


def wait_until_at_rest(cgroup, window_s=0.002, limit_s=0.2):
    """Until the cgroup's CPU time grows by less than 5% of a 2 ms window (at most 200 ms): what
    icebox bench waits for before it suspends (BenchSession.waitUntilAtRest), so both sides
    freeze a server that has finished answering, not one still busy with the request."""
    def used():
        stat = read(cgroup + "/cpu.stat", "")
        return sum(int(l.split()[1]) for l in stat.splitlines() if l.split()[0] in ("user_usec", "system_usec")) * 1000
    last, limit = used(), mono() + int(limit_s * 1e9)
    while mono() < limit:
        time.sleep(window_s)
        now = used()
        if now - last < window_s * 1e9 / 20:
            return
        last = now


class BareServer:
    """A server's cold and hot start with nothing in between, round by round as one run of icebox
    bench: spawn it into a cgroup of the benchmark's own → first GET answered (cold, probed on
    icebox bench's schedule), wait until it is at rest (as icebox bench does), freeze with the C one-shot (`bare once cgroup2 freeze`), hold 200 ms
    (icebox bench's --hold), thaw with the C one-shot → a GET answered (hot), kill it. The hot GET
    alternates round by round: sent while frozen, timed from the thaw command's spawn to the answer
    (`hot_pending`), or sent once the thaw command has exited, as icebox bench probes after `resume`
    (`hot_after`). A fresh instance each round: the hot GET is the server's second, as in icebox bench."""

    HOLD_S = 0.2

    def __init__(self, ctx, cgroup, command):
        self.ctx, self.cgroup, self.command, self.error, self.done = ctx, cgroup, command, None, 0
        self.samples = {"cold": [], "hot_pending": [], "hot_after": []}

    def rounds(self, n):
        bare = self.ctx.tools + "/bare"
        for _ in range(n):
            d, port, pending = f"{self.cgroup}-{self.done}", free_port(), self.done % 2 == 0
            self.done += 1
            os.makedirs(d)
            t0 = mono()
            p = subprocess.Popen(self.command(port), preexec_fn=lambda: write(d + "/cgroup.procs", str(os.getpid())),
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 start_new_session=True)
            try:
                http_get_when_up(port)
                self.samples["cold"].append(mono() - t0)
                wait_until_at_rest(d)  # as icebox bench does before its suspend
                run_oneshot([bare, "once", "cgroup2", "freeze", d])
                time.sleep(self.HOLD_S)
                thaw = [bare, "once", "cgroup2", "thaw", d]
                if pending:
                    sock, early = pending_get(port)
                    try:
                        if early:
                            raise RuntimeError("the frozen server answered")
                        _, got, _ = run_oneshot(thaw, pending=sock)
                    finally:
                        sock.close()
                    self.samples["hot_pending"].append(got)
                else:
                    t0 = mono()
                    run_oneshot(thaw)
                    http_get_when_up(port)
                    self.samples["hot_after"].append(mono() - t0)
            finally:
                write(d + "/cgroup.kill", "1")  # frozen or not
                p.wait(timeout=30)
                remove_cgroup_tree(d)

    def result(self, label):
        out = {"target": label, "samples": self.samples, "stats": {k: stats(v) for k, v in self.samples.items() if v}}
        if self.error:
            out["error"] = self.error
        return out

"""The figures of a run (*.png, matplotlib's Agg backend); none without matplotlib."""
import os

from .host import log


def plot(results, out_dir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib missing: no plots")
        return []
    made = []

    def save(fig, name):
        path = os.path.join(out_dir, name)
        fig.savefig(path, dpi=90)
        plt.close(fig)
        made.append(path)
    fr = results.get("freeze")
    if fr:
        rows = [r for r in fr["rows"] if "stats" in r]
        backends = [b for b in ("cgroup2", "cgroup1", "signal") if any(r["backend"] == b for r in rows)]
        for mode in ("idle", "busy"):
            fig, axes = plt.subplots(2, len(backends), figsize=(5.2 * len(backends), 8.6), squeeze=False, sharey="row")
            for col, backend in enumerate(backends):
                for row_i, op in enumerate(("freeze", "thaw")):
                    ax = axes[row_i][col]
                    for kind, marker, ls in (("procs", "o", "-"), ("threads", "s", "--")):
                        pts = sorted((r["threads"], r["stats"][f"bare_{op}"]["median"], r["stats"][f"ice_{op}"]["median"])
                                     for r in rows if r["backend"] == backend and r["mode"] == mode and r["kind"] == kind)
                        if not pts:
                            continue
                        x = [p[0] for p in pts]
                        what = "processes" if kind == "procs" else "threads (1 process)"
                        ax.plot(x, [p[1] / 1e6 for p in pts], ls, marker=marker, color="0.45", label=f"bare, {what}")
                        ax.plot(x, [p[2] / 1e6 for p in pts], ls, marker=marker, color="tab:blue", label=f"icebox, {what}")
                    ax.set_xscale("log")
                    ax.set_yscale("log")
                    ax.grid(True, which="both", alpha=0.3)
                    ax.set_title(f"{backend}: {op} ({mode})")
                    ax.set_xlabel("tasks in the app (threads in all)")
                    ax.set_ylabel(f"median {op} latency (ms)")
                    ax.legend(fontsize=8)
            fig.suptitle(f"freeze/thaw latency against app size, {mode} workloads: "
                         f"icebox (daemon-side) vs bare kernel operation", fontsize=12)
            fig.tight_layout()
            save(fig, f"freeze-thaw-{mode}.png")
    cli = results.get("cli")
    if cli and cli.get("backends"):
        fig, ax = plt.subplots(figsize=(10.5, 5.6))
        stacks = {"suspend": [("s_client_to_daemon", "client start-up → request reaches the daemon", "tab:orange"),
                              ("s_daemon_before_freeze", "daemon: notice and grace bookkeeping", "tab:purple"),
                              ("ice_freeze", "freeze / thaw (write → kernel confirms)", "tab:blue"),
                              ("s_reply_and_exit", "reply + client exit", "tab:green")],
                  "resume": [("r_client_to_thaw", "client start-up → request reaches the daemon", "tab:orange"),
                             ("ice_thaw", "freeze / thaw (write → kernel confirms)", "tab:blue"),
                             ("r_reply_and_exit", "reply + client exit", "tab:green")]}
        walls = {"suspend": ("suspend_wall", "kill_stop_wall", "/bin/kill -STOP"),
                 "resume": ("resume_wall", "kill_cont_wall", "/bin/kill -CONT")}
        seen, ticks, y = set(), [], 0.0

        def label(text):
            if text in seen:
                return None
            seen.add(text)
            return text
        for backend, b in cli["backends"].items():
            st = b["stats"]
            for op in ("suspend", "resume"):
                left = 0.0
                for key, lab, color in stacks[op]:
                    if st.get(key):
                        v = max(0.0, st[key]["median"] / 1e6)
                        ax.barh(y, v, left=left, height=0.5, color=color, label=label(lab))
                        left += v
                wall, kill, klab = walls[op]
                ax.barh(y + 0.42, st[wall]["median"] / 1e6, height=0.25, color="0.7", label=label("whole icebox command (wall)"))
                ax.barh(y + 0.7, st[kill]["median"] / 1e6, height=0.25, color="0.25", label=label("/bin/kill -STOP or -CONT (wall)"))
                ticks.append((y + 0.35, f"{op} ({backend})"))
                y += 1.25
            y += 0.4
        floor = cli["commands"].get("/bin/true (process spawn floor)")
        if floor:
            ax.axvline(floor["stats"]["median"] / 1e6, color="k", ls=":", lw=1, label="/bin/true (spawning any process)")
        ax.set_yticks([t[0] for t in ticks])
        ax.set_yticklabels([t[1] for t in ticks])
        ax.invert_yaxis()
        ax.set_xlabel("median time (ms)")
        ax.set_title("icebox suspend / resume as typed: where the time goes (medians, 1-process app)")
        ax.grid(True, axis="x", alpha=0.3)
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3)
        fig.tight_layout()
        save(fig, "cli.png")
    os_ = results.get("oneshot")
    if os_ and any(w.get("stats") for w in os_["workloads"]):
        ws = [w for w in os_["workloads"] if w.get("stats")]
        tools = [t for t in os_["tools"] if any(t in w["stats"] and "freeze" in w["stats"][t] for w in ws)]
        fig, axes = plt.subplots(1, len(ws), figsize=(4.6 * len(ws), 5.8), squeeze=False)
        colors = plt.get_cmap("tab10")
        for ax, w in zip(axes[0], ws):
            ops = [op for op in ("freeze", "thaw", "get") if any(op in w["stats"].get(t, {}) for t in tools)]
            width = 0.8 / len(tools)
            for i, t in enumerate(tools):
                st = w["stats"].get(t, {})
                xs = [j + (i - (len(tools) - 1) / 2) * width for j, op in enumerate(ops) if op in st]
                ys = [st[op]["median"] / 1e6 for op in ops if op in st]
                ax.bar(xs, ys, width, color=colors(i), label=os_["tools"][t].replace("`", ""))
            ax.set_xticks(range(len(ops)))
            ax.set_xticklabels([{"freeze": "freeze call", "thaw": "thaw call", "get": "thaw → GET"}[op] for op in ops])
            ax.set_yscale("log")
            plain = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}")
            ax.yaxis.set_major_formatter(plain)
            ax.yaxis.set_minor_formatter(plain)
            ax.tick_params(axis="y", which="minor", labelsize=7)
            ax.set_ylabel("median (ms, log scale)")
            ax.set_title(w["label"], fontsize=10)
            ax.grid(True, axis="y", which="both", alpha=0.3)
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8)
        fig.suptitle("one command per freeze / thaw, process start-up included: medians, interleaved round by round")
        fig.tight_layout(rect=(0, 0.12, 1, 0.96))
        save(fig, "oneshot.png")
    sc = results.get("scale")
    if sc and sc.get("levels"):
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.6))
        lw = sc["launch_wall_ns"]
        a1.plot(range(1, len(lw) + 1), [v / 1e6 for v in lw], ".", ms=3)
        a1.set_xlabel("apps running (including the one launched)")
        a1.set_ylabel("icebox launch wall time (ms)")
        a1.set_title("launching one more app, as the daemon fills up")
        a1.grid(True, alpha=0.3)
        lv = sc["levels"]
        x = [l["apps"] for l in lv]
        a2.plot(x, [l["suspend_all_wall_ns"] / l["apps"] / 1e6 for l in lv], "o-", label="suspend all, per app")
        a2.plot(x, [l["resume_all_wall_ns"] / l["apps"] / 1e6 for l in lv], "s-", label="resume all, per app")
        a2.plot(x, [l["suspend_all_freeze_ns"]["median"] / 1e6 for l in lv], "^--", label="of which freeze (daemon figure)")
        a2.plot(x, [l["ps_wall_ns"]["median"] / 1e6 for l in lv], "d-", label="icebox ps wall")
        a2.set_xscale("log")
        a2.set_yscale("log")
        a2.set_xlabel("apps in the daemon")
        a2.set_ylabel("ms")
        a2.set_title("bulk operations against the number of apps")
        a2.grid(True, which="both", alpha=0.3)
        a2.legend(fontsize=8)
        fig.tight_layout()
        save(fig, "scale.png")
    return made

"""The icebox benchmark suite: `scripts/bench/run` runs it as `python3 scripts/bench/suite ...`
(`__main__.py`, the driver: its --help lists the parts and options). One module a concept:

  host           the progress log and clock, cgroup mounts and directories, /proc, task limits, CPU pressure
  command        one command run and timed as a script would (spawn to exit), bare.c
  http_probe     a GET until a server is up, a GET left pending while it is frozen
  session        one icebox daemon under test, and a suspend's phases from its event log
  context        what every part is given, and what it set up, undone when it ends
  samples        the statistics of a row's samples, and how a figure is written
  verdict        whether a freeze/thaw figure misses its target, and the likely reason
  freeze, cli, oneshot (with oneshot_peers: its containers and plain instances), servers, scale
                 the parts, one module each: `part_NAME(ctx)` returns the part's results
  plots, report  the figures (*.png) and RESULTS.md from results.json

The names below are what the other scripts in scripts/bench take from the suite (`import suite`,
`from suite import fmt`), so that they read and time as the suite does rather than with copies.
"""
from .command import timed
from .host import CG2, cgroups_of, daemon_cpu_ns, log, mount_of, proc_stat, proc_status, settle_cpus
from .session import Session, check_stop_flag
from .samples import fmt, stats

__all__ = ["CG2", "Session", "cgroups_of", "check_stop_flag", "daemon_cpu_ns", "fmt", "log", "mount_of", "proc_stat",
           "proc_status", "settle_cpus", "stats", "timed"]

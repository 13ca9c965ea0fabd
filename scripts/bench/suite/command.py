"""Running one command as a script would and timing it (spawn to exit on a pidfd), and bare.c."""
import os
import select
import subprocess
import time

from .host import mono
from .http_probe import http_answer


def run_captured(argv, env=None, timeout=120, pending=None):
    """Runs `argv` with stdin from /dev/null and stdout and stderr captured, as a script would;
    returns (CompletedProcess with text output, CLOCK_MONOTONIC ns just before the spawn and
    at the exit, ns until the pending GET was answered or None). Everything within `timeout`
    s (killed past it). The exit is waited for on a pidfd, not with
    Popen.communicate/wait(timeout=), which poll with sleeps of 0.5, 1, 2 ms: a program
    preempted between closing its output and its exit was timed 0.5-1.5 ms late, and only
    programs that print (icebox --version: 1.71 ms against 0.69 ms checked side by side;
    /bin/kill and /bin/true print nothing)."""
    deadline = time.monotonic() + timeout
    t0 = mono()
    p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    got = None

    def expired():
        p.kill()
        p.wait()
        raise subprocess.TimeoutExpired(argv, timeout)

    outs = {p.stdout.fileno(): [], p.stderr.fileno(): []}
    try:
        if pending is not None:
            http_answer(pending)
            got = mono() - t0
        left_open = set(outs)
        while left_open:
            if deadline - time.monotonic() <= 0:
                expired()
            ready, _, _ = select.select(list(left_open), [], [], deadline - time.monotonic())
            for fd in ready:
                data = os.read(fd, 65536)
                if data:
                    outs[fd].append(data)
                else:
                    left_open.discard(fd)
        pidfd = os.pidfd_open(p.pid)
        try:
            if not select.select([pidfd], [], [], max(0.0, deadline - time.monotonic()))[0]:
                expired()
        finally:
            os.close(pidfd)
        p.wait()
        t1 = mono()
        out, err = (b"".join(outs[f.fileno()]).decode(errors="replace") for f in (p.stdout, p.stderr))
    finally:
        p.stdout.close()
        p.stderr.close()
        if p.returncode is None:  # something above failed: the command still ends, and is reaped
            try:
                p.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    return subprocess.CompletedProcess(argv, p.returncode, out, err), t0, t1, got


def run_oneshot(argv, env=None, pending=None, span=None):
    """Runs one command as a script would; returns (wall ns, ns until the pending GET was answered
    or None, stdout). Both from just before the spawn. `span`, a list, gets (spawn ns, exit ns)."""
    r, t0, t1, got = run_captured(argv, env=env, timeout=120, pending=pending)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:6])}: exit {r.returncode}: {(r.stderr or r.stdout).strip()[:300]}")
    if span is not None:
        span[:] = [t0, t1]
    return t1 - t0, got, r.stdout


def timed(argv, env=None):
    r, t0, t1, _ = run_captured(argv, env=env, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip()[:300]}")
    return t1 - t0


def run_bare(bare, *args, interval_us=20):
    r = subprocess.run([bare, "-i", str(interval_us), *args], capture_output=True, text=True, timeout=180)
    if r.returncode != 0:
        raise RuntimeError(f"bare {' '.join(args)}: {r.stderr.strip()}")
    return {k: int(v) for k, v in (line.split() for line in r.stdout.splitlines())}


def tool_version(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        return (r.stdout or r.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired) as e:
        return f"unavailable ({e})"

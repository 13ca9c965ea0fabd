"""The host under test: the progress log and the clock, cgroup mounts and directories (and their
removal), /proc readers, how many tasks the host still allows, and CPU pressure."""
import os
import select
import signal
import socket
import sys
import time

T0 = time.monotonic()


def log(*args):
    print(f"[{time.monotonic() - T0:6.1f}s]", *args, file=sys.stderr, flush=True)


def mono():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)  # the daemon's event clock too


def mounts():
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            out.append((fields[4], fields[sep + 1], fields[sep + 3].split(",")))
    return out


def mount_of(fstype, option=None):
    for point, fs, opts in mounts():
        if fs == fstype and (option is None or option in opts):
            return point
    return None


CG2 = mount_of("cgroup2")
FREEZER = mount_of("cgroup", "freezer")
V1_MOUNTS = sorted({point for point, fs, _ in mounts() if fs == "cgroup"})  # icebox mirrors its root in some

CPU_V1 = mount_of("cgroup", "cpu")
PIDS_V1 = mount_of("cgroup", "pids")


def daemon_cpu_ns(env):
    """The CPU time (ns, /proc/PID/schedstat) of the daemon serving env's ICEBOX_RUNTIME_DIR: steadier
    than a wall clock on a busy machine, for the benchmarks that charge a command's daemon work."""
    pid = open(env["ICEBOX_RUNTIME_DIR"] + "/daemon.lock").read().split()[0]
    return int(open(f"/proc/{pid}/schedstat").read().split()[0])


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        if default is None:
            raise
        return default


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def total_tasks():
    return int(read("/proc/loadavg").split()[3].split("/")[1])


def task_headroom():
    """How many more tasks (threads) this host lets us create, and which limit says so."""
    limits = [(int(read("/proc/sys/kernel/threads-max")) - total_tasks(), "kernel.threads-max"),
              (int(read("/proc/sys/kernel/pid_max")) - total_tasks(), "kernel.pid_max")]
    if PIDS_V1:
        rel = next((l.split(":", 2)[2].strip() for l in read("/proc/self/cgroup").splitlines()
                    if l.split(":")[1] == "pids"), None)
        while rel is not None:
            d = os.path.join(PIDS_V1, rel.lstrip("/"))
            mx, cur = read(d + "/pids.max", "max").strip(), read(d + "/pids.current", "0").strip()
            if mx and mx != "max":
                limits.append((int(mx) - int(cur), f"pids.max of {d}"))
            if rel in ("/", ""):
                break
            rel = os.path.dirname(rel)
    return min(limits)


def loadavg():
    """The 1, 5 and 15 minute load averages as the report writes them ("0.52 0.61 0.40")."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def cpu_pressure_some():
    """The "some" line of /proc/pressure/cpu as its fields ({"avg10": "1.22", ..., "total":
    "123"}); {} where the kernel has no PSI."""
    for line in read("/proc/pressure/cpu", "").splitlines():
        if line.startswith("some"):
            return dict(field.split("=", 1) for field in line.split()[1:] if "=" in field)
    return {}


def cpu_pressure():
    avg10 = cpu_pressure_some().get("avg10")
    return avg10 + "%" if avg10 is not None else "n/a"


def settle_cpus(limit_s=60):
    """Waits, at most limit_s, until the CPUs are quiet again: less than 2% of a second spent
    waiting for a CPU (the "some" total, in µs), and the 10 s average under 10%. A part that ends
    with thousands of tasks exiting (the 10000-thread rows) leaves the next part's first minute
    contended: the one-shot part measured at 80% CPU pressure moved its ratios by up to 0.4 from
    run to run. Returns the seconds waited."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        a = cpu_pressure_some()
        if "total" not in a:
            break
        time.sleep(1)
        b = cpu_pressure_some()
        if int(b["total"]) - int(a["total"]) < 20_000 and float(b["avg10"]) < 10:
            break
    return round(time.monotonic() - t0, 1)


def proc_stat(pid):
    text = read(f"/proc/{pid}/stat")
    fields = text[text.rindex(")") + 2:].split()
    return {"state": fields[0], "utime": int(fields[11]), "stime": int(fields[12])}


def proc_status(pid, key):
    for line in read(f"/proc/{pid}/status").splitlines():
        if line.startswith(key + ":"):
            return line.split(":", 1)[1].strip()
    return None


def pids_of(cgroup_dir):
    return [int(p) for p in read(cgroup_dir + "/cgroup.procs", "").split()]


def threads_of(pids):
    n = 0
    for p in pids:
        try:
            n += int(proc_status(p, "Threads"))
        except (OSError, TypeError, ValueError):
            pass
    return n


def cgroups_of(pid):
    """The v1 freezer and the cgroup2 directories of a process (None where it sits at the root)."""
    v1 = v2 = None
    for line in read(f"/proc/{pid}/cgroup").splitlines():
        hid, ctrls, path = line.split(":", 2)
        if path in ("/", ""):
            continue
        if hid == "0" and CG2:
            v2 = CG2 + path
        elif FREEZER and "freezer" in ctrls.split(","):
            v1 = FREEZER + path
    return v1, v2


def signal_quietly(pid, sig):
    """Sends a signal to a process that may have exited already (then nothing is to be done)."""
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def wait_until_empty(cgroup_dir, timeout=10.0):
    """Waits until a cgroup directory holds no process, at most `timeout` s; returns whether it
    emptied. A cgroup2 directory on the kernel's notification (POLLPRI on cgroup.events, until
    "populated 0"); a v1 one, which has none, by re-reading its cgroup.procs every 50 ms. A kill
    only sends SIGKILL: the processes are still exiting when it returns."""
    events = cgroup_dir + "/cgroup.events"
    deadline = time.monotonic() + timeout
    try:
        fd = os.open(events, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        while pids_of(cgroup_dir):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True
    try:
        poller = select.poll()
        poller.register(fd, select.POLLPRI)
        while True:
            if b"populated 0" in os.pread(fd, 4096, 0):
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            # The read above re-armed the notification; the kernel holds one back for up to
            # ~16 ms after the last, so wait no longer than that before reading again.
            poller.poll(min(left, 0.02) * 1000)
    finally:
        os.close(fd)


def remove_cgroup_tree(path):
    """Thaws and kills whatever is left in a cgroup tree (there should be nothing), then removes it."""
    if not os.path.isdir(path):
        return
    for sub in sorted((os.path.join(path, d) for d in os.listdir(path) if os.path.isdir(os.path.join(path, d))), reverse=True):
        remove_cgroup_tree(sub)
    pids = pids_of(path)
    if pids:
        log(f"cleanup: {len(pids)} processes left in {path}: killing them")
        for f, v in (("cgroup.freeze", "0"), ("freezer.state", "THAWED"), ("cgroup.kill", "1")):
            if os.path.exists(os.path.join(path, f)):
                try:
                    write(os.path.join(path, f), v)
                except OSError:
                    pass
        for p in pids:
            for sig in (signal.SIGKILL, signal.SIGCONT):
                signal_quietly(p, sig)
        wait_until_empty(path, timeout=5.0)
    for _ in range(50):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)
    log(f"cleanup: could not remove {path}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

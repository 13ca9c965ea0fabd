#!/usr/bin/env python3
"""An app written for icebox: it counts, and its count survives suspension and eviction.

- On launch it reads ICEBOX_LAUNCH_REASON: `restore` (the last instance was evicted, or
  killed while suspended) restores the count saved in ICEBOX_STATE_DIR; `fresh` starts at 0.
- On the background notice (SIGUSR1, iOS's didEnterBackground) it saves the count, then
  tells icebox it may be frozen now (READY=1), cutting the grace period short.
- On SIGTERM (willTerminate) it saves and exits 0.
- It reports its progress with STATUS=, which `icebox ps` shows.
"""
import json, os, signal, socket, sys, time

state_dir = os.environ.get("ICEBOX_STATE_DIR") or os.path.join(os.environ.get("TMPDIR", "/tmp"), "icebox-counter")
os.makedirs(state_dir, exist_ok=True)
state_file = os.path.join(state_dir, "counter.json")
reason = os.environ.get("ICEBOX_LAUNCH_REASON", "fresh")


def notify(message):
    path = os.environ.get("NOTIFY_SOCKET")
    if not path:
        return
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        s.sendto(message.encode(), "\0" + path[1:] if path.startswith("@") else path)
    finally:
        s.close()


def save():
    tmp = state_file + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"count": count}, f)
    os.replace(tmp, state_file)


def did_enter_background(signum, frame):
    save()
    print(f"saved count {count}; ready to be frozen", flush=True)
    notify("READY=1")


def will_terminate(signum, frame):
    save()
    print(f"terminating at count {count}", flush=True)
    sys.exit(0)


count = 0
if reason == "restore" and os.path.exists(state_file):
    with open(state_file) as f:
        count = json.load(f)["count"]
    print(f"relaunched after eviction: restored count {count}", flush=True)
else:
    print(f"fresh start ({reason})", flush=True)

signal.signal(signal.SIGUSR1, did_enter_background)
signal.signal(signal.SIGTERM, will_terminate)
notify(f"READY=1\nSTATUS=count {count}")
while True:
    time.sleep(0.1)
    count += 1
    if count % 10 == 0:
        notify(f"STATUS=count {count}")

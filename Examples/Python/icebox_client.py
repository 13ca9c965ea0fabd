#!/usr/bin/env python3
"""A client of the icebox daemon in Python alone, written from docs/protocol.md.

    icebox_client.py version
    icebox_client.py launch NAME -- COMMAND [ARG...]
    icebox_client.py suspend NAME [GRACE_NS]
    icebox_client.py resume NAME
    icebox_client.py ps

Each request is one JSON line on the daemon's control socket; the replies are JSON lines
up to the one of kind "done", whose "code" is the exit status. The socket is
$ICEBOX_RUNTIME_DIR/icebox.sock, else /run/icebox/icebox.sock for root, else
$XDG_RUNTIME_DIR/icebox/icebox.sock. The daemon must be running (any icebox command
starts one; this client does not).
"""
import json
import os
import socket
import sys


def socket_path():
    runtime = os.environ.get("ICEBOX_RUNTIME_DIR")
    if not runtime:
        if os.geteuid() == 0:
            runtime = "/run/icebox"
        else:
            runtime = os.path.join(os.environ.get("XDG_RUNTIME_DIR") or "/tmp/icebox-%d" % os.getuid(), "icebox")
    return os.path.join(runtime, "icebox.sock")


def request(req, timeout=60):
    """Sends one request and returns its replies, the final "done" one included."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(socket_path())
        s.sendall((json.dumps(req, separators=(",", ":")) + "\n").encode())
        replies, buffer = [], b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError("the daemon closed the connection before its done reply")
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                reply = json.loads(line)
                replies.append(reply)
                if reply["kind"] in ("done", "exit"):
                    return replies


def show(replies):
    """Prints line replies to stdout and warnings to stderr; returns the done code."""
    code = 0
    for reply in replies:
        if reply["kind"] == "line":
            print(reply.get("text", ""))
        elif reply["kind"] == "warning":
            print(reply.get("text", ""), file=sys.stderr)
        elif reply["kind"] == "data" and "apps" in reply:
            for app in reply["apps"]:
                print("%s %s %s" % (app["name"], app["state"], app["pid"]))
        elif reply["kind"] == "data" and "protocol_version" in reply:
            print("protocol %d" % reply["protocol_version"])
        elif reply["kind"] in ("done", "exit"):
            code = reply.get("code", 0)
            if code != 0 and reply.get("text"):
                print(reply["text"], file=sys.stderr)
            reason = reply.get("reason")
            if code != 0 and reason:
                # The typed reason, for a program to match on (its kind, and the app it names).
                print("reason %s %s" % (reason["kind"], reason.get("app", "-")), file=sys.stderr)
    return code


def main(argv):
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 64
    command, args = argv[0], argv[1:]
    if command == "version":
        req = {"version": {}}
    elif command == "launch" and len(args) >= 3 and args[1] == "--":
        options = {"name": args[0], "command": args[2:], "environment": ["PATH=" + os.environ.get("PATH", "/usr/bin:/bin")]}
        req = {"launch": {"options": options}}
    elif command == "suspend" and len(args) in (1, 2):
        req = {"suspend": {"names": [args[0]]}}
        if len(args) == 2:
            req["suspend"]["grace_ns"] = int(args[1])
    elif command == "resume" and len(args) == 1:
        req = {"resume": {"names": [args[0]], "wait_ready": False}}
    elif command == "ps" and not args:
        req = {"ps": {"all": False, "brief": False}}
    else:
        print(__doc__.strip(), file=sys.stderr)
        return 64
    return show(request(req))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The HTTP probes of the oneshot and servers parts: a GET until a server is up, a GET left
pending while it is frozen."""
import select
import socket
import time


HTTP_GET = b"GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"


def http_answer(sock, deadline_s=30):
    """Reads an HTTP/1.0 answer to its end (the server closes); raises unless it is a 200."""
    sock.settimeout(deadline_s)
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    if not data.startswith(b"HTTP/1.") or b" 200 " not in data.split(b"\r\n", 1)[0]:
        raise RuntimeError(f"unexpected answer: {data[:80]!r}")
    return data


def http_get_when_up(port, timeout_s=60):
    """GETs / until the server answers, retrying refused connections after a back-off from 50 µs
    doubling to 10 ms (icebox bench's readiness schedule: a port has no event to wait on)."""
    deadline = time.monotonic() + timeout_s
    backoff = 50e-6
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=max(0.01, deadline - time.monotonic())) as s:
                s.sendall(HTTP_GET)
                return http_answer(s, max(0.01, deadline - time.monotonic()))
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(backoff)
            backoff = min(backoff * 2, 0.01)


def pending_get(port, hold_s=0.005):
    """Sends a GET to a frozen server; says whether it was answered within hold_s anyway
    (then the server was not frozen)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(HTTP_GET)
    return s, bool(select.select([s], [], [], hold_s)[0])

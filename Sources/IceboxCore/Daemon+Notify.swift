import Glibc
import IceboxSystem

/// The sd_notify protocol on each app's NOTIFY_SOCKET.
extension Daemon {
    /// At most this many datagrams are read from one notify socket per turn of the loop: the
    /// socket stays readable (epoll is level-triggered), so the rest wait for the next turn
    /// and one flooded socket cannot starve every other app and client.
    static let notifyDatagramsPerTurn = 64
    /// Dropped datagrams are logged at most once per this interval per app, with a count.
    static let notifyDropLogIntervalNanos: UInt64 = 1_000_000_000

    func receiveNotify(_ app: LiveApp) {
        for _ in 0..<Self.notifyDatagramsPerTurn {
            guard let datagram = UnixSocket.receive(app.notifyFD) else { return }
            // Descriptors are closed after the message is handled: that is how a client's
            // BARRIER=1 (systemd-notify waits for it) learns the message was processed.
            defer { for fd in datagram.fds { close(fd) } }
            guard datagram.senderPID > 0, app.owns(senderPID: datagram.senderPID, unifiedMount: facts.mounts.unified) else {
                droppedNotify(app, from: datagram.senderPID)
                continue
            }
            apply(.notify(NotifyMessage.parse(datagram.text)), to: app)
        }
    }

    /// A message from a process that is not the app's: dropped, and logged at most once a
    /// second per app with the count since the last line (a flood wrote a line each, 29 MB
    /// of log in 10 s). What a second holds back is logged when it ends (a loop deadline).
    func droppedNotify(_ app: LiveApp, from pid: pid_t) {
        app.notifyDropped += 1
        app.notifyDropSender = pid
        let now = Clock.monotonicNanos()
        if now >= app.notifyDropLogAt { logDroppedNotify(app, now: now) }
    }

    func logDroppedNotify(_ app: LiveApp, now: UInt64) {
        let (n, pid) = (app.notifyDropped, app.notifyDropSender)
        guard n > 0 else { return }
        app.notifyDropped = 0
        app.notifyDropLogAt = now.saturatingAdd(Self.notifyDropLogIntervalNanos)
        let what = n == 1 ? "a message from pid \(pid)" : "\(n) messages (logged at most once a second; the last from pid \(pid))"
        log(Event(app: app.name, pid: pid, kind: .notify, detail: "dropped \(what): not a process of \(app.name)"))
    }
}

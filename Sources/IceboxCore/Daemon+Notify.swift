import Glibc
import IceboxSystem

/// The sd_notify protocol on each app's NOTIFY_SOCKET.
extension Daemon {
    func receiveNotify(_ app: LiveApp) {
        while let datagram = UnixSocket.receive(app.notifyFD) {
            // Descriptors are closed after the message is handled: that is how a client's
            // BARRIER=1 (systemd-notify waits for it) learns the message was processed.
            defer { for fd in datagram.fds { close(fd) } }
            guard datagram.senderPID > 0, app.owns(senderPID: datagram.senderPID, unifiedMount: facts.mounts.unified) else {
                log(
                    Event(
                        app: app.name, pid: datagram.senderPID, kind: .notify,
                        detail: "dropped a message from pid \(datagram.senderPID): not a process of \(app.name)"))
                continue
            }
            apply(.notify(NotifyMessage.parse(datagram.text)), to: app)
        }
    }
}

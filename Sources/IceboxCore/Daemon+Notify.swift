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
            handle(NotifyMessage.parse(datagram.text), from: datagram.senderPID, app: app)
        }
    }

    func handle(_ message: NotifyMessage, from sender: pid_t, app: LiveApp) {
        if let status = message.status {
            app.record.statusText = status
            saveRegistry(app.name)
        }
        if message.stopping {
            log(Event(app: app.name, pid: sender, kind: .notify, detail: "STOPPING=1"))
        }
        if let extra = message.extendNanos, app.record.state == .background, let deadline = app.graceDeadline {
            let now = Clock.monotonicNanos()
            let wanted = max(deadline, now.addingReportingOverflow(extra).overflow ? .max : now + extra)
            app.graceDeadline = min(wanted, app.graceCap)
            app.graceExtensions += 1
            saveRegistry(app.name)
            let capped = wanted > app.graceCap ? " (capped by --max-grace)" : ""
            log(
                Event(
                    app: app.name, pid: sender, kind: .grace,
                    detail:
                        "EXTEND_TIMEOUT_USEC: grace extended to \(DurationText.format(app.graceDeadline! - app.graceStart)) in all\(capped)"
                ))
        }
        if message.ready {
            switch app.record.state {
            case .launching:
                if case .notify = app.record.options.ready { becomeActive(app) }
            case .background:
                endGrace(app, reason: "READY=1")
            case .active:
                // The hot start as the app sees it: thaw → the app says it is ready again.
                if let resumed = app.resumedAt {
                    app.resumedAt = nil
                    let took = Clock.monotonicNanos() - resumed
                    let text = "hot start: resume → ready in \(DurationText.format(took)) (READY=1)"
                    log(Event(app: app.name, pid: sender, kind: .ready, durationNanos: took, detail: text))
                    for id in app.resumeWaiters { settle(id, app: app.name, line: "\(app.name)  \(text)") }
                    app.resumeWaiters = []
                    app.resumeReadyDeadline = nil
                }
            default:
                break
            }
        }
    }
}

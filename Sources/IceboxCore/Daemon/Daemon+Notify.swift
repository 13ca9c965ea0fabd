import Glibc
import IceboxSystem

/// The sd_notify protocol on each app's NOTIFY_SOCKET, its own or the shared one (NotifyChannel).
extension Daemon {
    /// At most this many datagrams are read from one app's socket per turn (the rest wait,
    /// level-triggered), so one flooded socket cannot starve every other app and client.
    static let notifyDatagramsPerTurn = 64
    /// The shared socket serves many apps: more per turn, still bounded.
    static let sharedNotifyDatagramsPerTurn = 256

    func receiveNotify(_ app: LiveApp) {
        guard let fd = app.notify.ownFD else { return }
        for _ in 0..<Self.notifyDatagramsPerTurn {
            guard let datagram = UnixSocket.receive(fd) else { return }
            // Descriptors are closed after the message is handled: that is how a client's
            // BARRIER=1 (systemd-notify waits for it) learns the message was processed.
            defer { for fd in datagram.fds { close(fd) } }
            guard datagram.senderPID > 0, app.owns(senderPID: datagram.senderPID, unifiedMount: facts.mounts.unifiedMount) else {
                // Not the app's: dropped, and logged at most once a second per app, with a count.
                let now = Clock.monotonicNanos()
                if app.notifyDrops.drop(from: datagram.senderPID, now: now) { logDroppedNotify(app, now: now) }
                continue
            }
            apply(.notify(NotifyMessage.parse(datagram.text)), to: app)
        }
    }

    /// Held datagrams of the shared socket at most (`heldSharedNotify`); past it they are dropped.
    static let heldSharedNotifyLimit = 64

    /// Datagrams on the shared socket: each goes to its sender's app (by cgroup, or session
    /// without v2) if that app was given the shared socket; any other is dropped and counted.
    func receiveSharedNotify() {
        for _ in 0..<Self.sharedNotifyDatagramsPerTurn {
            guard descriptors.sharedNotifyFD >= 0, let datagram = UnixSocket.receive(descriptors.sharedNotifyFD) else { return }
            defer { for fd in datagram.fds { close(fd) } }
            guard datagram.senderPID > 0, let app = sharedNotifySender(datagram.senderPID) else {
                // A launch through a stand-in has no app until the stand-in answers, and its
                // READY=1 may come first (the two in one turn, or the stand-in not yet run): held
                // while launches wait, not lost (the launch would wait out its ready timeout).
                if datagram.senderPID > 0, !pendingLaunches.isEmpty, descriptors.heldSharedNotify.count < Self.heldSharedNotifyLimit {
                    descriptors.heldSharedNotify.append((datagram.senderPID, datagram.text))
                } else {
                    dropSharedNotify(from: datagram.senderPID)
                }
                continue
            }
            apply(.notify(NotifyMessage.parse(datagram.text)), to: app)
        }
    }

    /// After a pending launch ended: the held datagrams go to their apps now; those of no app
    /// stay held while other launches wait, else they are dropped and counted.
    func replayHeldSharedNotify() {
        let held = descriptors.heldSharedNotify
        descriptors.heldSharedNotify = []
        for (sender, text) in held {
            if let app = sharedNotifySender(sender) {
                apply(.notify(NotifyMessage.parse(text)), to: app)
            } else if !pendingLaunches.isEmpty {
                descriptors.heldSharedNotify.append((sender, text))
            } else {
                dropSharedNotify(from: sender)
            }
        }
    }

    private func dropSharedNotify(from sender: pid_t) {
        let now = Clock.monotonicNanos()
        if descriptors.sharedNotifyDrops.drop(from: sender, now: now) { logSharedNotifyDrops(now: now) }
    }

    /// The app on the shared socket that `pid` belongs to, or nil.
    func sharedNotifySender(_ pid: pid_t) -> LiveApp? {
        let candidate: LiveApp?
        if let root = facts.cgroupRoot, let unified = facts.mounts.unifiedMount, facts.cgroup2Usable {
            // The app's v2 cgroup is <root>/<name>: the first component below the root.
            guard let path = CgroupMembership.path(of: pid, mount: unified), path.hasPrefix(root + "/") else { return nil }
            candidate = apps[String(path.dropFirst(root.count + 1).prefix { $0 != "/" })]
        } else {
            // No v2 cgroup: an app is a session leader, and its session's id is its pid.
            guard let session = ProcFS.stat(pid: pid)?.session else { return nil }
            candidate = apps.values.first { $0.pid == session }
        }
        guard let app = candidate, case .shared = app.notify, app.owns(senderPID: pid, unifiedMount: facts.mounts.unifiedMount)
        else { return nil }
        return app
    }

    /// The shared socket's path, bound (and watched) at its first use.
    func sharedNotifySocket() throws(IceboxError) -> String {
        let path = config.paths.sharedNotifySocket
        if descriptors.sharedNotifyFD >= 0 { return path }
        do throws(SystemError) {
            let fd = try UnixSocket.bindNotify(path: path)
            do throws(SystemError) { try watch(fd, .sharedNotify) } catch {
                close(fd)
                throw error
            }
            descriptors.sharedNotifyFD = fd
        } catch {
            throw IceboxError("bind the shared notify socket", error)
        }
        return path
    }

    /// At the daemon's end: the socket closes; its path stays while apps left running use it.
    func closeSharedNotify() {
        guard descriptors.sharedNotifyFD >= 0 else { return }
        unwatch(descriptors.sharedNotifyFD)
        close(descriptors.sharedNotifyFD)
        descriptors.sharedNotifyFD = -1
        if !apps.values.contains(where: { $0.notify == .shared(path: config.paths.sharedNotifySocket) }) {
            unlink(config.paths.sharedNotifySocket)
        }
    }

    func logDroppedNotify(_ app: LiveApp, now: UInt64) {
        guard let (n, pid) = app.notifyDrops.take(now: now) else { return }
        log(.notify, app: app.name, pid: pid, "dropped \(NotifyDrops.describe(n, sender: pid)): not a process of \(app.name)")
    }

    func logSharedNotifyDrops(now: UInt64) {
        guard let (n, pid) = descriptors.sharedNotifyDrops.take(now: now) else { return }
        log(
            .notify, app: "-", pid: pid,
            "dropped \(NotifyDrops.describe(n, sender: pid)) on the shared notify socket: not a process of an app that uses it")
    }
}

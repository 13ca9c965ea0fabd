import Glibc
import IceboxSystem

/// systemd's socket activation (sd_listen_fds(3)): the control socket passed as descriptor 3
/// onwards, with LISTEN_PID (ours), LISTEN_FDS (how many) and LISTEN_FDNAMES (their names).
package enum SocketActivation {
    /// The first descriptor passed (SD_LISTEN_FDS_START).
    package static let firstFD: Int32 = 3

    /// The descriptors passed to `pid` and their names, from the environment; nil: none. Pure.
    package static func passed(environment env: [String: String], pid: pid_t) -> [(fd: Int32, name: String)]? {
        guard let countText = env["LISTEN_FDS"], let count = Int32(countText), count > 0, count < 1024 else { return nil }
        // LISTEN_PID guards against a child inheriting the variables by accident.
        guard let pidText = env["LISTEN_PID"], pid_t(pidText) == pid else { return nil }
        let names = env["LISTEN_FDNAMES"].map { $0.split(separator: ":", omittingEmptySubsequences: false).map(String.init) } ?? []
        return (0..<count).map { i in (firstFD + i, Int(i) < names.count ? names[Int(i)] : "unknown") }
    }

    /// The control socket passed to this process (of several, the one named "icebox"); nil
    /// when not socket-activated. The variables are removed so apps never see them.
    package static func controlSocket(environment env: [String: String]) throws(IceboxError) -> Int32? {
        defer { for key in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { unsetenv(key) } }
        guard let fds = passed(environment: env, pid: getpid()) else { return nil }
        let chosen = fds.count == 1 ? fds[0] : fds.first { $0.name == "icebox" }
        guard let chosen else {
            throw IceboxError(
                .usage, "socket activation passed \(fds.count) descriptors and none is named 'icebox'",
                hint: "set FileDescriptorName=icebox in the .socket unit")
        }
        guard UnixSocket.isListeningUnixStream(chosen.fd) else {
            throw IceboxError(
                .usage, "socket activation passed descriptor \(chosen.fd) (\(chosen.name)), which is not a listening Unix stream socket",
                hint: "use ListenStream=/run/icebox/icebox.sock in the .socket unit")
        }
        do {
            for other in fds where other.fd != chosen.fd { _ = fcntl(other.fd, F_SETFD, FD_CLOEXEC) }
            try UnixSocket.adopt(chosen.fd)
        } catch {
            throw IceboxError("take the control socket from socket activation", error)
        }
        return chosen.fd
    }
}

/// The daemon's own sd_notify(3) messages (READY=1, STOPPING=1) when NOTIFY_SOCKET is set,
/// for Type=notify units. Best effort: a manager that went away must not stop the daemon.
package struct ServiceNotifier: Sendable {
    package let socketPath: String?

    package init(environment env: [String: String]) {
        socketPath = env["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    }

    package func notify(_ text: String) {
        guard let socketPath else { return }
        // sd_notify is advice to a manager that may be gone; the daemon serves either way.
        try? UnixSocket.sendDatagram(path: socketPath, text)
    }
}

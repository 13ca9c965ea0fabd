import Glibc
import IceboxSystem

/// systemd's socket activation (sd_listen_fds(3)): a service manager that owns the control
/// socket passes it to the daemon as descriptor 3 onwards, with LISTEN_PID (ours),
/// LISTEN_FDS (how many) and LISTEN_FDNAMES (colon-separated names, from FileDescriptorName=).
/// `systemd-socket-activate` speaks the same protocol.
package enum SocketActivation {
    /// The first descriptor passed (SD_LISTEN_FDS_START).
    package static let firstFD: Int32 = 3

    /// The descriptors passed to `pid` and their names, from the environment; nil when none
    /// were passed to this process (no LISTEN_FDS, or LISTEN_PID names another process). Pure.
    package static func passed(environment env: [String: String], pid: pid_t) -> [(fd: Int32, name: String)]? {
        guard let countText = env["LISTEN_FDS"], let count = Int32(countText), count > 0, count < 1024 else { return nil }
        // LISTEN_PID guards against a child inheriting the variables (and our descriptors'
        // numbers) by accident; systemd always sets it.
        guard let pidText = env["LISTEN_PID"], pid_t(pidText) == pid else { return nil }
        let names = env["LISTEN_FDNAMES"].map { $0.split(separator: ":", omittingEmptySubsequences: false).map(String.init) } ?? []
        return (0..<count).map { i in (firstFD + i, Int(i) < names.count ? names[Int(i)] : "unknown") }
    }

    /// The control socket passed to this process, made ready for the daemon's loop; nil when
    /// the daemon was not socket-activated. The variables are removed so apps never see them.
    /// With several descriptors, the one named "icebox" (FileDescriptorName=icebox) is taken.
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

/// The daemon's own sd_notify(3) messages to its service manager (READY=1 once it listens,
/// STOPPING=1 when it stops), when NOTIFY_SOCKET is set: Type=notify units then know when
/// icebox is up. Best effort: a manager that went away must not stop the daemon.
package struct ServiceNotifier: Sendable {
    package let socketPath: String?

    package init(environment env: [String: String]) {
        socketPath = env["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    }

    package func notify(_ text: String) {
        guard let socketPath else { return }
        // sd_notify is advice to a service manager that may be gone or not listening; the daemon
        // serves either way.
        try? UnixSocket.sendDatagram(path: socketPath, text)
    }
}

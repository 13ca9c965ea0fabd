import Glibc

/// Where an app's sd_notify datagrams (its NOTIFY_SOCKET) arrive.
///
/// An app gets a socket of its own while the daemon has descriptors to spare (`DescriptorBudget`):
/// a flood on it is that app's alone, read at most `Daemon.notifyDatagramsPerTurn` per turn. Past
/// that, apps launched from then on share the daemon's one socket (systemd's way: one socket, the
/// sender's cgroup says which unit), so that a daemon of 10,000 apps holds one descriptor per app,
/// not two. The choice is made at launch and kept: the path is in the app's environment.
enum NotifyChannel: Equatable {
    /// A socket of the app's own, bound at `path`; the daemon holds `fd`.
    case own(fd: Int32, path: String)
    /// The daemon's shared socket at `path`: a datagram's sender is looked up among the apps.
    case shared(path: String)

    var path: String {
        switch self {
        case .own(_, let path), .shared(let path): return path
        }
    }

    /// The descriptor the app holds on its own; nil for the shared socket (the daemon's).
    var ownFD: Int32? {
        if case .own(let fd, _) = self { return fd }
        return nil
    }
}

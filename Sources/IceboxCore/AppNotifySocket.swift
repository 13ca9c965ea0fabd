import Glibc
import IceboxSystem

/// Where an app's NOTIFY_SOCKET is bound, and who may send to it.
///
/// An app that runs as the daemon's user gets its socket in the notify directory, inside
/// the runtime directory (0700). An app run as another user (--user) cannot pass that
/// directory, and the runtime directory stays 0700: its socket goes into a directory of its
/// own under /tmp, made by mkdtemp (a name no one can guess or take first), owned by the
/// daemon and mode 0711 (others may pass through it, not list or write it), and the socket
/// in it belongs to the app's user with mode 0600: only that user, and the daemon, can send
/// to it. A path, not an inherited descriptor, because sd_notify clients (libsystemd,
/// systemd-notify, a two-line script) take NOTIFY_SOCKET as a path; not an abstract socket,
/// which anyone could reach and which plain sendto() clients cannot address. As for every
/// app, a message counts only when its sender is a process in the app's cgroup.
enum AppNotifySocket {
    static let privateParent = "/tmp"
    static let privatePrefix = "icebox-notify-"
    static let privateName = "notify"

    /// Binds the app's socket (at `existing` when re-adopting an app that has one elsewhere)
    /// and returns its descriptor and path.
    static func bind(app: String, paths: IceboxPaths, runAs: RunAs?, existing: String? = nil) throws(IceboxError) -> (
        fd: Int32, path: String
    ) {
        guard let runAs, runAs.uid != geteuid() else {
            let path = existing ?? paths.notifySocket(app)
            do { return (try UnixSocket.bindNotify(path: path), path) } catch { throw IceboxError("launch \(app)", error) }
        }
        let dir: String
        if let existing {
            dir = String(existing.dropLast(privateName.count + 1))
            try checkPrivate(dir, existing: existing)
        } else {
            var template = Array("\(privateParent)/\(privatePrefix)XXXXXX".utf8CString)
            guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
                throw IceboxError("launch \(app)", SystemError("make a notify directory in", path: privateParent))
            }
            dir = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            chmod(dir, 0o711)
        }
        let path = dir + "/" + privateName
        let fd: Int32
        do { fd = try UnixSocket.bindNotify(path: path) } catch {
            if existing == nil { rmdir(dir) }
            throw IceboxError("launch \(app)", error)
        }
        // The directory is the daemon's and no one else can write in it: no link can be put here.
        if chmod(path, 0o600) != 0 || chown(path, runAs.uid, runAs.gid) != 0 {
            let e = SystemError("give the notify socket to uid \(runAs.uid)", path: path)
            close(fd)
            remove(path)
            throw IceboxError("launch \(app)", e)
        }
        return (fd, path)
    }

    /// A directory made by `bind` for an app being re-adopted: still the daemon's, 0711, no link.
    static func checkPrivate(_ dir: String, existing: String) throws(IceboxError) {
        let base = dir.split(separator: "/").last.map(String.init) ?? ""
        guard dir == privateParent + "/" + base, base.hasPrefix(privatePrefix),
            let status = try? FileIO.linkStatus(dir), status.kind == .directory, status.owner == geteuid(),
            status.permissions & 0o7777 == 0o711
        else {
            throw IceboxError(.permission, "refusing to bind the notify socket \(existing): its directory is not one icebox made")
        }
    }

    /// Removes the socket, and its directory if it had one of its own.
    static func remove(_ path: String) {
        unlink(path)
        let dir = String(path.dropLast(privateName.count + 1))
        if path.hasPrefix(privateParent + "/" + privatePrefix), path.hasSuffix("/" + privateName) { rmdir(dir) }
    }
}

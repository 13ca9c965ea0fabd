import Glibc
import IceboxSystem

/// Where an app's NOTIFY_SOCKET is bound, and who may send to it.
///
/// An app that runs as the daemon's user gets its socket in the notify directory, inside the
/// runtime directory (0700). An app run as another user (--user) cannot pass that directory, which
/// stays 0700: its socket goes into a directory of its own under /tmp, unguessably named
/// (`privatePath`), the daemon's and 0711 (others may pass through, not list or write), the socket
/// in it the app's user's, 0600: only that user and the daemon can send to it. The name is chosen
/// before the launch's first registry record, which names it, and the directory made (exclusively)
/// only then: a daemon killed at any point of the launch leaves its successor the path to recognise
/// the app by (AppMarks) or to remove. A path, not an inherited descriptor: sd_notify clients
/// (libsystemd, systemd-notify, a two-line script) take NOTIFY_SOCKET as a path; not an abstract
/// socket, which anyone could reach and plain sendto() clients cannot address. As for every app, a
/// message counts only when its sender is a process in the app's cgroup.
enum AppNotifySocket {
    static let privateParent = "/tmp"
    static let privatePrefix = "icebox-notify-"
    static let privateName = "notify"

    /// Whether an app run as `runAs` gets a socket in a directory of its own under /tmp.
    static func needsPrivate(_ runAs: RunAs?) -> Bool { runAs.map { $0.uid != geteuid() } ?? false }

    /// A fresh path for a private socket, its directory not made yet: 16 characters from getrandom
    /// (95 bits; mkdtemp's six give 35), so no one can guess the name and make it first (and if
    /// someone does, `bind`'s exclusive mkdir refuses it).
    static func privatePath() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        var random = SystemRandomNumberGenerator()
        let tag = String((0..<16).map { _ in alphabet[Int(random.next(upperBound: UInt64(alphabet.count)))] })
        return "\(privateParent)/\(privatePrefix)\(tag)/\(privateName)"
    }

    /// Binds the app's socket and returns its descriptor and path: at `existing` when re-adopting
    /// an app that has one, else for an app run as another user at `planned` (from `privatePath`,
    /// already in its record), its directory made here.
    static func bind(app: String, paths: IceboxPaths, runAs: RunAs?, existing: String? = nil, planned: String? = nil)
        throws(IceboxError) -> (fd: Int32, path: String)
    {
        guard let runAs, runAs.uid != geteuid() else {
            let path = existing ?? paths.notifySocket(app)
            do { return (try UnixSocket.bindNotify(path: path), path) } catch { throw IceboxError("launch \(app)", error) }
        }
        let dir: String
        if let existing {
            dir = String(existing.dropLast(privateName.count + 1))
            // Gone (a /tmp cleaner, or a launch killed before it made it): made again at the name
            // the app knows, exclusively, so a directory someone else put there is refused. An
            // lstat that fails otherwise than "no such file" (.some(nil)) leaves the directory to
            // the bind below, which throws with the path.
            if (try? FileIO.linkStatus(dir)) == .some(nil) { try makePrivate(dir, app: app) }
            try checkPrivate(dir, existing: existing)
        } else {
            dir = String((planned ?? privatePath()).dropLast(privateName.count + 1))
            try makePrivate(dir, app: app)
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

    /// Makes `dir` exclusively (EEXIST, a link included, fails), the daemon's and 0711.
    static func makePrivate(_ dir: String, app: String) throws(IceboxError) {
        if mkdir(dir, 0o700) != 0 { throw IceboxError("launch \(app)", SystemError("make the notify directory", path: dir)) }
        chmod(dir, 0o711)
    }

    /// A directory made by `bind` for an app being re-adopted: still the daemon's, 0711, no link.
    static func checkPrivate(_ dir: String, existing: String) throws(IceboxError) {
        let base = dir.split(separator: "/").last.map(String.init) ?? ""
        guard dir == privateParent + "/" + base, base.hasPrefix(privatePrefix),
            // A directory we cannot lstat is not one we can vouch for: refused below, saying why.
            let status = try? FileIO.linkStatus(dir), status.kind == .directory, status.owner == geteuid(),
            status.permissions & 0o7777 == 0o711
        else {
            throw IceboxError(.permission, "refusing to bind the notify socket \(existing): its directory is not one icebox made")
        }
    }

    /// Removes the socket, and its directory if it had one of its own. A private directory is
    /// touched only while it is still one icebox made (a directory, not a link, the daemon's,
    /// writable by no one else; 0700 still if the daemon died before its chmod): a recorded path
    /// whose directory was never made (a launch cut short) or is someone else's is left alone.
    static func remove(_ path: String) {
        guard path.hasPrefix(privateParent + "/" + privatePrefix), path.hasSuffix("/" + privateName) else {
            unlink(path)
            return
        }
        let dir = String(path.dropLast(privateName.count + 1))
        // A directory we cannot check is left alone: removing less is the safe side.
        guard !dir.dropFirst(privateParent.count + 1).contains("/"), let status = try? FileIO.linkStatus(dir),
            status.kind == .directory, status.owner == geteuid(), status.permissions & 0o022 == 0
        else { return }
        unlink(path)
        rmdir(dir)
    }
}

import Glibc
import IceboxSystem

/// Where a daemon keeps its socket and its state. Several daemons run side by side when each
/// gets its own runtime directory, state directory and cgroup root.
public struct IceboxPaths: Sendable, Codable, Equatable {
    /// The runtime directory: control socket, lock, notify sockets (`ICEBOX_RUNTIME_DIR`).
    public var runtimeDir: String
    /// The state directory: event log, registry, app logs, policy (`ICEBOX_STATE_DIR`).
    public var stateDir: String

    /// The paths of a daemon that uses these two directories.
    public init(runtimeDir: String, stateDir: String) {
        self.runtimeDir = runtimeDir
        self.stateDir = stateDir
    }

    /// $ICEBOX_RUNTIME_DIR, else /run/icebox for root, else $XDG_RUNTIME_DIR/icebox, else
    /// /tmp/icebox-UID/icebox (which `prepare` and `verify` refuse if someone else made it);
    /// $ICEBOX_STATE_DIR, else /var/lib/icebox for root, else $XDG_STATE_HOME/icebox
    /// (~/.local/state/icebox).
    public static func fromEnvironment(_ env: [String: String]) -> IceboxPaths { fromEnvironment { env[$0] } }

    /// The same, with each variable looked up by `variable` (this process's: getenv).
    public static func fromEnvironment(_ variable: (String) -> String?) -> IceboxPaths {
        let root = getuid() == 0
        let home = variable("HOME") ?? "/tmp"
        let runtime =
            variable("ICEBOX_RUNTIME_DIR").nonEmpty
            ?? (root ? "/run/icebox" : (variable("XDG_RUNTIME_DIR").nonEmpty ?? fallbackRuntimeParent) + "/icebox")
        let state =
            variable("ICEBOX_STATE_DIR").nonEmpty
            ?? (root ? "/var/lib/icebox" : (variable("XDG_STATE_HOME").nonEmpty ?? home + "/.local/state") + "/icebox")
        return IceboxPaths(runtimeDir: runtime, stateDir: state)
    }

    /// The daemon's control socket (the JSON-lines protocol of docs/protocol.md).
    public var controlSocket: String { runtimeDir + "/icebox.sock" }
    package var lockFile: String { runtimeDir + "/daemon.lock" }
    package var notifyDir: String { runtimeDir + "/notify" }
    package func notifySocket(_ app: String) -> String { notifyDir + "/" + app }
    /// The notify socket apps share once the daemon is short of descriptors (NotifyChannel).
    package var sharedNotifySocket: String { runtimeDir + "/notify.sock" }
    /// The event log: one JSON line per ``Event``, rotated to `events.jsonl.1`, ...
    public var eventLog: String { stateDir + "/events.jsonl" }
    /// One JSON file per app: a state change rewrites only that app's file.
    package var registryDir: String { stateDir + "/registry" }
    package func registryRecord(_ app: String) -> String { registryDir + "/" + app + ".json" }
    /// The daemon's own log (its stderr when it was started on demand).
    public var daemonLog: String { stateDir + "/daemon.log" }
    /// The eviction policy, kept so a daemon started on demand applies the last one.
    package var policyFile: String { stateDir + "/policy.json" }
    package var appLogDir: String { stateDir + "/logs" }
    /// An app's output (stdout and stderr) when it was launched detached.
    public func appLog(_ app: String) -> String { appLogDir + "/" + app + ".log" }
    /// The app's persistent state directory (ICEBOX_STATE_DIR in its environment).
    package func appStateDir(_ app: String) -> String { stateDir + "/apps/" + app }

    /// The runtime directory's parent when neither ICEBOX_RUNTIME_DIR nor XDG_RUNTIME_DIR is
    /// set (a user other than root), for the user `uid`: icebox makes it, and checks it.
    package static var fallbackRuntimeParent: String { fallbackRuntimeParent(uid: geteuid()) }
    package static func fallbackRuntimeParent(uid: uid_t) -> String { "/tmp/icebox-\(uid)" }

    /// The directories icebox makes and uses, each with what it is called in an error and
    /// the variable that moves it.
    var directories: [(path: String, role: String, variable: String)] {
        let runtime = "XDG_RUNTIME_DIR or ICEBOX_RUNTIME_DIR", state = "XDG_STATE_HOME or ICEBOX_STATE_DIR"
        let parent = Self.fallbackRuntimeParent
        let runtimeDirs = runtimeDir == parent + "/icebox" ? [parent, runtimeDir] : [runtimeDir]
        return runtimeDirs.map { ($0, "runtime directory", runtime) } + [(notifyDir, "notify directory", runtime)]
            + [(stateDir, "state directory", state)]
            + [registryDir, appLogDir, stateDir + "/apps"].map { ($0, "directory", state) }
    }

    /// The files icebox makes in those directories, with the kind each must be.
    var files: [(path: String, kind: FileIO.Status.Kind)] {
        [
            (lockFile, .regular), (controlSocket, .socket), (sharedNotifySocket, .socket), (eventLog, .regular),
            (daemonLog, .regular), (policyFile, .regular),
        ]
    }

    /// Why a file icebox made (or would make) cannot be trusted, or nil: it must be what it
    /// should be (never a symbolic link), belong to `user` (the effective uid), and a directory
    /// must not be writable by group or others (`prepare` then makes it 0700). Else someone
    /// who made it first could run a fake daemon there, or point a file the daemon writes at ours.
    package static func trustProblem(_ status: FileIO.Status, expected: FileIO.Status.Kind, user: uid_t) -> String? {
        if status.kind == .symlink { return "it is a symbolic link" }
        if status.kind != expected {
            let names: [FileIO.Status.Kind: String] = [
                .directory: "a directory", .regular: "a regular file", .socket: "a socket", .symlink: "a symbolic link",
                .other: "a special file",
            ]
            return "it is not \(names[expected] ?? "what icebox makes") but \(names[status.kind] ?? "something else")"
        }
        if status.owner != user { return "it belongs to uid \(status.owner), not to uid \(user)" }
        if expected == .directory && status.permissions & 0o022 != 0 {
            return "its mode is \(String(status.permissions, radix: 8).leftPadded(to: 4)): group or others may write in it"
        }
        return nil
    }

    /// A directory of ours that others may read but not write (mkdir under umask 022): no one
    /// else can have put anything in it, so `prepare` makes it 0700 rather than refusing it.
    static func onlyTooReadable(_ status: FileIO.Status, user: uid_t) -> Bool {
        status.kind == .directory && status.owner == user && status.permissions & 0o077 != 0
            && status.permissions & 0o022 == 0
    }

    /// Checks every directory and file icebox makes that exists now (see `trustProblem`);
    /// throws a permission error (exit 77) that names the path, what is wrong and what to do.
    package func verify() throws(IceboxError) {
        let user = geteuid()
        for d in directories { try Self.check(d.path, .directory, role: d.role, variable: d.variable, user: user) }
        for file in files { try Self.check(file.path, file.kind, role: "file", variable: nil, user: user) }
    }

    static func check(_ path: String, _ kind: FileIO.Status.Kind, role: String, variable: String?, user: uid_t)
        throws(IceboxError)
    {
        let status: FileIO.Status?
        do { status = try FileIO.linkStatus(path) } catch { throw IceboxError("check \(role) \(path)", error) }
        guard let status, let problem = trustProblem(status, expected: kind, user: user) else { return }
        let fix =
            status.kind == .directory && status.owner == user
            ? "chmod 700 \(path)" : "remove it" + (variable.map { ", or set \($0) to a directory of your own" } ?? "")
        throw IceboxError(.permission, "refusing to use \(role) \(path): \(problem)", hint: fix)
    }

    /// Creates the directories (mode 0700), then checks them and their files (`verify`): one
    /// someone else made, or made a link, is refused, never used.
    package func prepare() throws(IceboxError) {
        for dir in directories.map(\.path) {
            do { try FileIO.makeDirectories(dir, mode: 0o700) } catch {
                // A symbolic link or someone else's directory in the way: say that, not "cannot create".
                try verify()
                throw IceboxError("prepare directory \(dir)", error)
            }
        }
        try verify()
        let user = geteuid()
        for dir in directories.map(\.path) {
            // verify() just checked it; gone meanwhile, there is nothing to tighten.
            if let status = try? FileIO.linkStatus(dir), Self.onlyTooReadable(status, user: user) { chmod(dir, 0o700) }
        }
    }
}

extension IceboxPaths {
    /// Opens (creating) the daemon's lock file with `openTrusted`: the check that holds even if
    /// a path `verify` checked changed since.
    package func openLockFile() throws(IceboxError) -> Int32 {
        try Self.openTrusted(
            "daemon.lock", in: runtimeDir, role: "runtime directory", variables: "XDG_RUNTIME_DIR or ICEBOX_RUNTIME_DIR",
            flags: O_RDWR | O_CREAT, mode: 0o600, unopenableDirectory: verify)
    }

    /// Opens `name` through `directory`'s descriptor, never through a symbolic link
    /// (O_NOFOLLOW), and checks what was opened: a regular file of ours in a directory of ours.
    /// `unopenableDirectory` runs first when the directory cannot be opened, to say why.
    package static func openTrusted(
        _ name: String, in directory: String, role: String, variables: String, flags: Int32, mode: mode_t = 0o600,
        unopenableDirectory: () throws(IceboxError) -> Void = {}
    ) throws(IceboxError) -> Int32 {
        let user = geteuid()
        let path = directory + "/" + name
        let dirFD: Int32
        do { dirFD = try FileIO.openDirectory(directory) } catch {
            try unopenableDirectory()
            throw IceboxError("open \(role) \(directory)", error)
        }
        defer { close(dirFD) }
        let dir: FileIO.Status
        do { dir = try FileIO.status(fd: dirFD, path: directory) } catch { throw IceboxError("open \(path)", error) }
        if let problem = trustProblem(dir, expected: .directory, user: user) {
            throw IceboxError(
                .permission, "refusing to use \(role) \(directory): \(problem)",
                hint: "remove it, or set \(variables) to a directory of your own")
        }
        let fd: Int32
        do { fd = try FileIO.openAt(dirFD, name, flags: flags, mode: mode, path: path) } catch {
            if error.errno == ELOOP {
                throw IceboxError(.permission, "refusing to use file \(path): it is a symbolic link", hint: "remove it")
            }
            throw IceboxError("open \(path)", error)
        }
        let file: FileIO.Status
        do { file = try FileIO.status(fd: fd, path: path) } catch {
            close(fd)
            throw IceboxError("open \(path)", error)
        }
        if let problem = trustProblem(file, expected: .regular, user: user) {
            close(fd)
            throw IceboxError(.permission, "refusing to use file \(path): \(problem)", hint: "remove it")
        }
        return fd
    }
}

extension String {
    func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}

extension Optional where Wrapped == String {
    var nonEmpty: String? { self?.isEmpty == false ? self : nil }
}

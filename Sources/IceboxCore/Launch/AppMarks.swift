import Glibc
import IceboxSystem

/// How a daemon recognises its own app's processes without a record (a record lost, or a daemon
/// killed between the spawn and writing the pid): the app's cgroup is named after it under icebox's
/// root, and its processes carry ICEBOX_APP_NAME=NAME and the NOTIFY_SOCKET this daemon gave it in
/// their initial environment (/proc/PID/environ, which a later setenv does not change). Both marks
/// are needed: another daemon sharing the cgroup root can run an app of the same name, with its
/// own socket.
struct AppMarks {
    let name: String
    /// The NOTIFY_SOCKET values this daemon may have given the app: its own socket's path (in the
    /// runtime directory, or the recorded one under /tmp), or the one apps share (NotifyChannel).
    let notifySockets: [String]

    init(name: String, ownSocket: String, sharedSocket: String) {
        self.name = name
        notifySockets = [ownSocket, sharedSocket]
    }

    /// Whether `pid` carries both marks.
    func carried(by pid: pid_t) -> Bool {
        guard let env = Self.environment(of: pid), env.contains("ICEBOX_APP_NAME=\(name)") else { return false }
        return notifySockets.contains { env.contains("NOTIFY_SOCKET=\($0)") }
    }

    /// The NOTIFY_SOCKET in `pid`'s initial environment.
    static func notifySocket(of pid: pid_t) -> String? {
        environment(of: pid)?.first { $0.hasPrefix("NOTIFY_SOCKET=") }.map { String($0.dropFirst("NOTIFY_SOCKET=".count)) }
    }

    /// The app's main process among its marked processes: one whose parent is not among them (the
    /// first spawned; its children and theirs have a marked parent), the oldest if more than one.
    /// nil when none is alive.
    static func mainProcess(among pids: [pid_t]) -> pid_t? {
        let stats = pids.compactMap { pid in ProcFS.stat(pid: pid).map { (pid, $0) } }.filter { $0.1.state != "Z" && $0.1.state != "X" }
        let marked = Set(stats.map(\.0))
        return stats.filter { !marked.contains($0.1.ppid) }.min { $0.1.startTimeTicks < $1.1.startTimeTicks }?.0
    }

    /// The initial environment of `pid`, KEY=VALUE entries; nil when it cannot be read.
    static func environment(of pid: pid_t) -> [String]? {
        // nil: a process gone, or someone else's.
        guard let text = try? FileIO.read("/proc/\(pid)/environ") else { return nil }
        return text.split(separator: "\0").map(String.init)
    }

    /// The command line of `pid`, for a record rebuilt from the kernel.
    static func commandLine(of pid: pid_t) -> [String] {
        // A process gone meanwhile has no command line: the rebuilt record then shows none.
        ((try? FileIO.read("/proc/\(pid)/cmdline")) ?? "").split(separator: "\0").map(String.init)
    }
}

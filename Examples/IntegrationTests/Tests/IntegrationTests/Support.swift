import Foundation
import IceboxCore

/// What this host offers, and the PATH the tests run with.
enum Host {
    /// Why the tests cannot run here (printed as the skip reason), or nil: they need a
    /// cgroup v2 hierarchy this process may create cgroups in (root, or a delegated subtree).
    static let problem: String? = Supervisor.hostProblem

    /// Drops from PATH every directory holding an `icebox` executable, so that nothing
    /// could run one by accident.
    static func removeIceboxFromPath() {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let kept = path.split(separator: ":").filter { !FileManager.default.isExecutableFile(atPath: "\($0)/icebox") }
        setenv("PATH", kept.joined(separator: ":"), 1)
    }

    /// The program `name` as PATH finds it, or nil.
    static func resolve(_ name: String) -> String? {
        let path = String(cString: getenv("PATH"))
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

/// The kernel's view, read from /sys and /proc.
enum Kernel {
    /// The keys of the cgroup's `cgroup.events` ("populated", "frozen").
    static func events(of cgroup: String) -> [String: String] {
        let text = (try? String(contentsOfFile: cgroup + "/cgroup.events", encoding: .utf8)) ?? ""
        var keys: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2 { keys[String(parts[0])] = String(parts[1]) }
        }
        return keys
    }

    static func processes(in cgroup: String) -> [Int32] {
        let text = (try? String(contentsOfFile: cgroup + "/cgroup.procs", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { Int32($0) }
    }

    /// The state letter of /proc/PID/stat (R running, S sleeping, T stopped, Z zombie), or
    /// nil if there is no such process.
    static func state(of pid: Int32) -> Character? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return nil }
        return stat[stat.index(end, offsetBy: 2)]
    }

    static func count(_ file: String) -> Int {
        Int((try? String(contentsOfFile: file, encoding: .utf8)) ?? "") ?? 0
    }

    /// Checks a condition every 10 ms for up to 10 s: the app's progress has no event to wait on.
    static func waitUntil(_ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }
}

/// The apps the tests launch.
enum Apps {
    /// A python app that does what an app with a background notice handler does: on SIGUSR1
    /// (icebox's notice) it saves its state (here, it writes "saved") and says READY=1 on
    /// its NOTIFY_SOCKET, which ends its grace at once; it says READY=1 at its start too
    /// (launched with `ready: .notify`).
    static func noticeHandler(python: String, savedTo file: String) -> [String] {
        let script = """
            import os, signal, socket
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            addr = os.environ['NOTIFY_SOCKET']
            def on_notice(*_):
                with open('\(file)', 'w') as f:
                    f.write('saved')
                s.sendto(b'READY=1', addr)
            signal.signal(signal.SIGUSR1, on_notice)
            s.sendto(b'READY=1', addr)
            while True:
                signal.pause()
            """
        return [python, "-c", script]
    }
}

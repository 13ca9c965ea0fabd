import Glibc
import IceboxSystem

/// Where a daemon keeps its socket and its state. Several daemons run side by side when each
/// gets its own runtime directory, state directory and cgroup root.
public struct IceboxPaths: Sendable, Codable, Equatable {
    public var runtimeDir: String
    public var stateDir: String

    public init(runtimeDir: String, stateDir: String) {
        self.runtimeDir = runtimeDir
        self.stateDir = stateDir
    }

    /// $ICEBOX_RUNTIME_DIR, else /run/icebox for root, else $XDG_RUNTIME_DIR/icebox;
    /// $ICEBOX_STATE_DIR, else /var/lib/icebox for root, else $XDG_STATE_HOME/icebox
    /// (~/.local/state/icebox).
    public static func fromEnvironment(_ env: [String: String]) -> IceboxPaths {
        let root = getuid() == 0
        let home = env["HOME"] ?? "/tmp"
        let runtime =
            env["ICEBOX_RUNTIME_DIR"].nonEmpty
            ?? (root ? "/run/icebox" : (env["XDG_RUNTIME_DIR"].nonEmpty ?? "/tmp/icebox-\(getuid())") + "/icebox")
        let state =
            env["ICEBOX_STATE_DIR"].nonEmpty
            ?? (root ? "/var/lib/icebox" : (env["XDG_STATE_HOME"].nonEmpty ?? home + "/.local/state") + "/icebox")
        return IceboxPaths(runtimeDir: runtime, stateDir: state)
    }

    public var controlSocket: String { runtimeDir + "/icebox.sock" }
    public var lockFile: String { runtimeDir + "/daemon.lock" }
    public var notifyDir: String { runtimeDir + "/notify" }
    public func notifySocket(_ app: String) -> String { notifyDir + "/" + app }
    public var eventLog: String { stateDir + "/events.jsonl" }
    /// One JSON file per app: a state change rewrites only that app's file.
    public var registryDir: String { stateDir + "/registry" }
    public func registryRecord(_ app: String) -> String { registryDir + "/" + app + ".json" }
    public var daemonLog: String { stateDir + "/daemon.log" }
    /// The eviction policy, kept so a daemon started on demand applies the last one.
    public var policyFile: String { stateDir + "/policy.json" }
    public var appLogDir: String { stateDir + "/logs" }
    public func appLog(_ app: String) -> String { appLogDir + "/" + app + ".log" }
    /// The app's persistent state directory (ICEBOX_STATE_DIR in its environment).
    public func appStateDir(_ app: String) -> String { stateDir + "/apps/" + app }

    /// Creates the directories: runtime 0700 (the socket inside is 0600), state 0700.
    public func prepare() throws(IceboxError) {
        for dir in [runtimeDir, notifyDir, stateDir, appLogDir] {
            do { try FileIO.makeDirectories(dir, mode: 0o700) } catch {
                throw IceboxError("prepare directory \(dir)", error)
            }
        }
        chmod(runtimeDir, 0o700)
        chmod(stateDir, 0o700)
    }
}

extension Optional where Wrapped == String {
    var nonEmpty: String? {
        guard let s = self, !s.isEmpty else { return nil }
        return s
    }
}

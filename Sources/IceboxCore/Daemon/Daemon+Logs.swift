import Glibc
import IceboxSystem

/// The apps' output logs, rotated at the configured size (`AppLogRotator`; `EventLog` rotates
/// itself).
extension Daemon {
    /// Starts watching the output log directory, if rotation is on; a failure is logged.
    func startAppLogRotation() {
        guard config.logRotation.maxBytes > 0 else { return }
        do {
            let rotator = try AppLogRotator(directory: config.paths.appLogDir, rotation: config.logRotation)
            if let fd = rotator.fd { try watch(fd, .appLogs) }
            appLogs = rotator
            if let refused = rotator.pollingBecause {
                log(.error, app: "-", pid: getpid(), "the apps' output logs are checked every second, not as they are written: \(refused)")
            }
        } catch {
            log(.error, app: "-", pid: getpid(), "the apps' output logs will not be rotated: \(error)")
        }
    }

    /// An app wrote to its log: unwatched until the check (at most once a second).
    func appLogsChanged() {
        guard let appLogs, let fd = appLogs.fd else { return }
        unwatch(fd)
        appLogs.changed(now: Clock.monotonicNanos())
    }

    func stepAppLogs(now: UInt64) {
        guard let appLogs else { return }
        for failure in appLogs.step(now: now) { log(.error, app: failure.app, pid: nil, failure.text) }
        if appLogs.armed, let fd = appLogs.fd, watches.token(of: fd) == nil {
            do { try watch(fd, .appLogs) } catch {
                log(.error, app: "-", pid: getpid(), "the apps' output logs will not be rotated: \(error)")
                self.appLogs = nil
            }
        }
    }
}

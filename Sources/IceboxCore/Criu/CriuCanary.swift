import Glibc
import IceboxSystem

/// The canary of the CRIU probe: a throwaway child (`sleep`, in a session of its own, its standard
/// streams on /dev/null, holding a TCP socket listening on 127.0.0.1 as its descriptor 3) dumped to
/// a fresh 0700 directory and restored as this process's child again (`--restore-sibling
/// --restore-detached`), listening again, then killed and reaped, and the directory removed. `criu
/// check` passes on kernels that break dump or restore, and criu 4.1.1's passes on Linux 6.16 where
/// it cannot dump any TCP socket; this does not. Nothing is left behind, whatever fails.
package enum CriuCanary {
    /// Each criu run's deadline: a canary takes ~150 ms.
    static let timeoutNanos: UInt64 = 30_000_000_000

    package struct Timing: Sendable, Equatable {
        package var dumpNanos: UInt64
        package var restoreNanos: UInt64
    }

    /// Dumps and restores a canary with the criu at `criu`; the timing, or why it failed.
    package static func run(criu: String) -> Result<Timing, CriuCanaryFailure> {
        func fail(_ why: String) -> Result<Timing, CriuCanaryFailure> { .failure(CriuCanaryFailure(why)) }
        let dir: String
        do { dir = try FileIO.makeTemporaryDirectory(prefix: "icebox-criu-canary.") } catch {
            return fail("cannot make the canary's image directory: \(error)")
        }
        // The canary's verdict is the result; a temporary directory that stays under /tmp must not
        // turn a working criu into a failed one.
        defer { try? FileIO.removeTree(dir) }
        guard let sleep = ["/usr/bin/sleep", "/bin/sleep"].first(where: { (path: String) in access(path, X_OK) == 0 }) else {
            return fail("no /usr/bin/sleep to use as the canary")
        }
        // Every server evicted to disk holds one; the canary's is the only copy once it runs
        // (ours is closed), so the port is free again when criu's dump kills it.
        let listener: Int32
        do { listener = try listeningSocket().get() } catch { return .failure(error) }
        var request = SpawnRequest(executable: sleep, arguments: ["sleep", "3600"], environment: [])
        request.newSession = true  // criu dumps a tree whose session leader is inside it
        request.extraFD = listener
        let canary: ProcessHandle
        do {
            defer { close(listener) }
            canary = try Spawner.spawn(request).handle
        } catch {
            return fail("cannot start the canary: \(error)")
        }
        defer { killAndReap(canary) }

        let dump: CriuCommand
        do {
            dump = try CriuCommand.run(
                criu, ["dump", "--tree", String(canary.pid), "--images-dir", dir, "--log-file", "dump.log"],
                timeoutNanos: timeoutNanos)
        } catch { return fail("cannot run criu dump: \(error)") }
        guard dump.succeeded else { return fail("dump: " + reason(dump, log: dir + "/dump.log")) }
        // criu killed the dumped canary; its pid is free only once reaped, and a restore before
        // that fails (`Can't fork for PID: File exists`). A failed wait is handled as a wrong
        // ending: the failure below says how the dump went instead.
        guard case .signaled(SIGKILL)? = (try? canary.wait(until: Clock.monotonicNanos() + 5_000_000_000)) ?? nil else {
            return fail("criu dump exited 0 but the canary was not killed by it")
        }

        let restore: CriuCommand, restored: ProcessHandle?
        do { (restore, restored) = try CriuCommand.restore(criu, images: dir, timeoutNanos: timeoutNanos) } catch {
            return fail("cannot run criu restore: \(error)")
        }
        // A restored canary is this process's child whatever criu said: it is ended.
        defer { if let restored { killAndReap(restored) } }
        guard restore.succeeded else { return fail("restore: " + reason(restore, log: dir + "/restore.log")) }
        guard let restored else { return fail("criu restore exited 0 but wrote no live pid to \(dir)/restored.pid") }
        // From the kernel: the canary runs again, with its pid, as this process's child. A stat
        // that cannot be read is a restored canary gone already: the check fails and says so below.
        guard restored.pid == canary.pid, let stat = try? FileIO.read("/proc/\(restored.pid)/stat"),
            let parent = parentPid(inStat: stat), parent == getpid()
        else {
            return fail(
                "the restored canary (pid \(restored.pid), dumped as \(canary.pid)) is not this process's child")
        }
        guard listensOnTCP(pid: restored.pid, fd: 3) else {
            return fail("the restored canary (pid \(restored.pid)) holds no listening TCP socket as descriptor 3")
        }
        return .success(Timing(dumpNanos: dump.nanos, restoreNanos: restore.nanos))
    }

    /// The first `Error (` line of criu's log (else of its output), else how it ended.
    static func reason(_ command: CriuCommand, log: String) -> String {
        // No log (criu never got that far): its output is quoted instead.
        CriuCommand.firstError(in: (try? FileIO.read(log)) ?? "") ?? CriuCommand.firstError(in: command.output)
            ?? "criu " + command.ending(timeoutNanos: timeoutNanos)
    }

    /// A TCP socket listening on 127.0.0.1, on a port the kernel picks (close-on-exec: the
    /// spawn gives the canary its own descriptor 3).
    static func listeningSocket() -> Result<Int32, CriuCanaryFailure> {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            return .failure(CriuCanaryFailure("cannot make the canary's TCP socket: \(SystemError("socket"))"))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 1) == 0 else {
            let error = SystemError(bound == 0 ? "listen" : "bind 127.0.0.1:0")
            close(fd)
            return .failure(CriuCanaryFailure("cannot make the canary's TCP socket: \(error)"))
        }
        return .success(fd)
    }

    /// Whether descriptor `fd` of `pid` is a TCP socket in LISTEN state, from the kernel:
    /// its inode (the /proc/PID/fd link) on a line of /proc/net/tcp whose state is 0A.
    static func listensOnTCP(pid: pid_t, fd: Int32, table: String = "/proc/net/tcp") -> Bool {
        guard let target = CheckpointObstacle.descriptors(of: pid).first(where: { $0.fd == fd })?.target,
            let inode = CheckpointObstacle.socketInode(target)
        else { return false }
        // Fields: sl, local, remote, st (3), queues, timers, retrnsmt, uid, timeout, inode (9). An
        // unreadable table has no such socket: the check then says the socket was not restored.
        return ((try? FileIO.read(table)) ?? "").split(separator: "\n").dropFirst().contains { line in
            let fields = line.split(separator: " ")
            return fields.count > 9 && fields[3] == "0A" && UInt32(fields[9]) == inode
        }
    }

    /// The fourth field of /proc/PID/stat (after the command name in parentheses).
    static func parentPid(inStat text: String) -> pid_t? {
        ProcFS.statFieldsAfterName(text).flatMap { $0.count > 1 ? pid_t($0[1]) : nil }
    }

    static func killAndReap(_ process: ProcessHandle) {
        // An error (not our child any more) counts as running: SIGKILL and a bounded wait follow.
        guard (try? process.reapIfExited()) == nil else { return }
        // ESRCH only: it exited meanwhile, and the wait below reaps it.
        _ = try? process.send(SIGKILL)
        // Bounded, must not throw: a process unreaped 5 s after SIGKILL is the kernel's to finish.
        _ = try? process.wait(until: Clock.monotonicNanos() + 5_000_000_000)
    }
}

/// Why the canary could not be dumped and restored.
package struct CriuCanaryFailure: Error, Sendable, Equatable {
    package var reason: String
    init(_ reason: String) { self.reason = reason }
}

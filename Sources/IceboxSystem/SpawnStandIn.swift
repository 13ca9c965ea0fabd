import CIceboxShim
import Glibc

/// A stand-in for one launch: a child of this process that has joined the app's v1 cgroups
/// ahead of time and, asked to, clones the app with those memberships (see
/// icebox_stand_in.h for why: a write to cgroup.procs waits out an RCU grace period, and
/// this moves it off the launch path). The app it spawns is this process's child, exactly as
/// with `Spawner.spawn`.
///
/// One use only: after a spawn (or a refusal) the stand-in exits. Dropping the value closes
/// its socket, which also makes an idle stand-in exit; `dismiss` waits for that.
public final class SpawnStandIn {
    public let handle: ProcessHandle
    private let socket: Int32
    public private(set) var isReady = false

    /// Starts one that joins each cgroup.procs of `procsFDs` (opened for writing; the caller
    /// keeps and closes its own copies).
    public init(joining procsFDs: [Int32]) throws(SystemError) {
        var pidfd: Int32 = -1, sock: Int32 = -1
        let pid = procsFDs.withUnsafeBufferPointer { icebox_stand_in_start($0.baseAddress!, Int32($0.count), &pidfd, &sock) }
        if pid < 0 { throw SystemError("start a spawn stand-in (clone3)") }
        handle = ProcessHandle(pid: pid, pidfd: pidfd)
        socket = sock
    }

    /// Its socket: readable once it has joined its cgroups (`checkReady`), or when it is gone.
    public var watchDescriptor: Int32 { socket }

    /// Reads its ready message without blocking: true once it sits in every cgroup; false
    /// while it has not said yet; throws when it could not join one (the errno of that
    /// write) or is gone.
    public func checkReady() throws(SystemError) -> Bool {
        if isReady { return true }
        var attachErrno: Int32 = 0
        switch icebox_stand_in_ready(socket, &attachErrno) {
        case 0: return false
        case 1 where attachErrno == 0:
            isReady = true
            return true
        case 1: throw SystemError("join its cgroups (write to cgroup.procs) as a spawn stand-in", errno: attachErrno)
        default: throw SystemError("hear from the spawn stand-in pid \(handle.pid)")
        }
    }

    /// Has it spawn `request` (its v1 descriptors are not used: the stand-in is in those
    /// cgroups). `.unusable` when the stand-in could not spawn at all (gone, timed out, no
    /// clone3 here): the caller spawns the direct way instead. The stand-in has exited (and
    /// is reaped) when this returns.
    public func spawn(_ request: SpawnRequest, timeoutNanos: UInt64) -> StandInOutcome {
        var result = icebox_spawn_result()
        let rc = Spawner.withCRequest(request) { icebox_stand_in_spawn(socket, $0, &result, timeoutNanos) }
        let failure = rc < 0 ? SystemError("spawn through the stand-in pid \(handle.pid)") : nil
        dismiss()
        if let failure { return .unusable(failure) }
        do { return .spawned(try Spawner.outcome(result, of: request)) } catch { return .failed(error) }
    }

    /// Lets it go: its socket closes, so it exits; it is killed when it has not within
    /// `deadline` (monotonic ns; default: 1 s), and reaped either way.
    public func dismiss(deadline: UInt64? = nil) {
        shutdown(socket, Int32(SHUT_RDWR))
        let until = deadline ?? Clock.monotonicNanos() &+ 1_000_000_000  // far from wrapping: ns since boot
        if (try? handle.wait(until: until)) == nil {
            _ = try? handle.send(SIGKILL)
            _ = try? handle.wait(until: Clock.monotonicNanos() &+ 5_000_000_000)
        }
    }

    deinit { Glibc.close(socket) }
}

/// What a stand-in's spawn came to.
public enum StandInOutcome {
    case spawned(SpawnedProcess)
    /// The program could not be run (as `Spawner.spawn` would have thrown).
    case failed(SpawnError)
    /// The stand-in could not spawn at all: spawn the direct way.
    case unusable(SystemError)
}

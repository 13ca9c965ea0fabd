import CIceboxShim
import Glibc

/// A stand-in for one launch: a child of this process that has joined the app's v1 cgroups
/// ahead of time and, asked to, clones the app with those memberships (icebox_stand_in.h says
/// why). The app it spawns is this process's child, exactly as with `Spawner.spawn`.
///
/// One use only: after a spawn (or a refusal) the stand-in exits. Dropping the value closes
/// its socket, which also makes an idle stand-in exit; `dismiss` waits for that.
package final class SpawnStandIn {
    package let handle: ProcessHandle
    private let socket: Int32
    package private(set) var isReady = false
    private var dismissed = false

    /// Starts one that joins each cgroup.procs of `procsFDs` (opened for writing; the caller
    /// keeps and closes its own copies).
    package init(joining procsFDs: [Int32]) throws(SystemError) {
        var pidfd: Int32 = -1, sock: Int32 = -1
        let pid = procsFDs.withUnsafeBufferPointer { icebox_stand_in_start($0.baseAddress!, Int32($0.count), &pidfd, &sock) }
        if pid < 0 { throw SystemError("start a spawn stand-in (clone3)") }
        handle = ProcessHandle(pid: pid, pidfd: pidfd)
        socket = sock
    }

    /// Its socket: readable once it has joined its cgroups (`checkReady`), or when it is gone.
    package var watchDescriptor: Int32 { socket }

    /// Reads its ready message without blocking: true once it sits in every cgroup; false while it
    /// has not said yet; throws when it could not join one (the errno of that write) or is gone.
    package func checkReady() throws(SystemError) -> Bool {
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

    /// Sends it `request` to spawn (its v1 descriptors are not used: the stand-in is in those
    /// cgroups), without waiting: `outcome(of:)` reads it once `watchDescriptor` is readable.
    /// Its descriptors are the stand-in's copies once this returns. Throws when it cannot be
    /// sent (the stand-in is gone): the caller spawns the direct way instead.
    package func send(_ request: SpawnRequest) throws(SystemError) {
        let rc = Spawner.withCRequest(request) { icebox_stand_in_send(socket, $0) }
        if rc < 0 {
            let failure = SystemError("send a spawn request to the stand-in pid \(handle.pid)")
            letGo()
            throw failure
        }
    }

    /// The outcome of the request `send` sent, read without waiting for the stand-in: nil while it
    /// has not answered. `.unusable` when the stand-in could not spawn at all (gone, no clone3
    /// here): the caller spawns directly instead.
    ///
    /// Whatever the outcome the stand-in has been let go but may still be exiting, still in the
    /// app's v1 cgroups: the caller reaps it (its pidfd, or `dismiss`) before anything counts,
    /// freezes or reports the app. After `.spawned` it waited for the let-go, so that its exit
    /// comes after the app's execve (icebox_stand_in.h). A stand-in that never answers (stopped,
    /// say) is the caller's to give up on, at a deadline of its own.
    package func outcome(of request: SpawnRequest) -> StandInOutcome? {
        var result = icebox_spawn_result()
        let rc = icebox_stand_in_result(socket, &result)
        if rc == 0 { return nil }
        let confirmed = Clock.monotonicNanos()
        if rc < 0 {
            let failure = SystemError("spawn through the stand-in pid \(handle.pid)")
            letGo()
            return .unusable(failure)
        }
        letGo()
        do { return .spawned(try Spawner.outcome(result, of: request, confirmedAt: confirmed)) } catch {
            return .failed(error)
        }
    }

    /// Tells it to go without waiting: its socket shuts down, and a parked stand-in, or one that
    /// has spawned, exits.
    package func letGo() { shutdown(socket, Int32(SHUT_RDWR)) }

    /// Lets it go and reaps it: it is killed when it has not exited within `deadline`
    /// (monotonic ns; default: 1 s). Once only; later calls return at once.
    package func dismiss(deadline: UInt64? = nil) {
        if dismissed { return }
        dismissed = true
        letGo()
        let until = deadline ?? Clock.monotonicNanos() &+ 1_000_000_000  // far from wrapping: ns since boot
        if (try? handle.wait(until: until)) == nil {
            _ = try? handle.send(SIGKILL)
            _ = try? handle.wait(until: Clock.monotonicNanos() &+ 5_000_000_000)
        }
    }

    deinit { Glibc.close(socket) }
}

/// What a stand-in's spawn came to.
package enum StandInOutcome {
    case spawned(SpawnedProcess)
    /// The program could not be run (as `Spawner.spawn` would have thrown).
    case failed(SpawnError)
    /// The stand-in could not spawn at all: spawn the direct way.
    case unusable(SystemError)
}

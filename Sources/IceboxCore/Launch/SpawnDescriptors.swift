import Glibc
import IceboxSystem

/// The descriptors the spawner needs to start an app inside its cgroups, from
/// `AppCgroups.spawnDescriptors()`: the v2 directory for clone3(CLONE_INTO_CGROUP), its
/// cgroup.procs for the fallback (move before execve), and the v1 cgroup.procs files to join before
/// execve. -1 where there is none. Noncopyable, so exactly one owner closes them: when the value
/// ends (after the spawn, or on any error path), or at `close()`.
package struct SpawnDescriptors: ~Copyable {
    package let cgroupDirFD: Int32
    package let cgroupProcsFD: Int32
    package let v1ProcsFD: Int32
    package let v1MemoryProcsFD: Int32

    /// Puts the descriptors into a request (they stay owned here: close after the spawn).
    package func apply(to request: inout SpawnRequest) {
        request.cgroupDirFD = cgroupDirFD
        request.cgroupProcsFD = cgroupProcsFD
        request.v1ProcsFD = v1ProcsFD
        request.v1MemoryProcsFD = v1MemoryProcsFD
    }

    /// Closes them now (ending the value runs deinit, which closes them).
    package consuming func close() {}

    /// Hands them over to the caller, who closes them: a spawn through a stand-in keeps them
    /// until the stand-in answers (a direct spawn may still need them then).
    package consuming func handOver() -> [Int32] {
        let fds = [cgroupDirFD, cgroupProcsFD, v1ProcsFD, v1MemoryProcsFD].filter { $0 >= 0 }
        discard self
        return fds
    }

    deinit {
        // Never retried on EINTR: Linux releases the descriptor either way.
        for fd in [cgroupDirFD, cgroupProcsFD, v1ProcsFD, v1MemoryProcsFD] where fd >= 0 { Glibc.close(fd) }
    }
}

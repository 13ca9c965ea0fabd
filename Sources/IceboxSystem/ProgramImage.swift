import CIceboxShim
import Glibc

/// The running program's own file-backed image (its loadable segments).
package enum ProgramImage {
    /// Locks the image in memory (mlock of every PT_LOAD segment; they are faulted in first) and
    /// returns how many bytes that is. For the daemon, as Android's lmkd locks itself: the process
    /// that must act under memory pressure must not wait for its own pages. And every `icebox`
    /// command runs from the same file, so it finds them in memory after an idle spell (proactive
    /// reclaim had made `--version` take 1.73 ms against 1.10 ms). Throws EPERM or ENOMEM without
    /// CAP_IPC_LOCK past RLIMIT_MEMLOCK (nothing stays locked then).
    package static func lockInMemory() throws(SystemError) -> UInt64 {
        UInt64(try systemCall("mlock its loadable segments") { icebox_lock_program_image() })
    }
}

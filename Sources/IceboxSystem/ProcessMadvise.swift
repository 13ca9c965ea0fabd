import CIceboxShim
import Glibc

/// process_madvise(2): memory advice applied to another process, through its pidfd (Linux 5.10;
/// needs ptrace read access and CAP_SYS_NICE over the target). Only non-destructive advice is
/// allowed on another process, which is exactly what compaction wants: the pages stay valid, and
/// the app faults them back in when it runs again.
package enum ProcessMadvise {
    /// The values of <linux/mman.h>, spelled out: glibc's headers only have them from 2.31.
    package enum Advice: Int32, Sendable {
        /// Deactivate the pages: they become the first candidates when reclaim runs.
        case cold = 20  // MADV_COLD
        /// Reclaim the pages now (clean file pages are dropped, anonymous ones need swap).
        case pageout = 21  // MADV_PAGEOUT
    }

    /// UIO_MAXIOV: the kernel rejects a longer iovec array with EINVAL.
    package static let maxRangesPerCall = 1024

    package struct Range: Equatable, Sendable {
        package var start: UInt64
        package var length: UInt64

        package init(start: UInt64, length: UInt64) {
            self.start = start
            self.length = length
        }
    }

    package struct Outcome: Equatable, Sendable {
        package var bytesAdvised: UInt64 = 0
        /// Ranges the kernel went all the way through.
        package var rangesAdvised = 0
        /// Ranges it refused (EINVAL for mlocked or VM_PFNMAP ones, ENOMEM for one unmapped
        /// since /proc/PID/maps was read, EAGAIN): skipped, and the next range tried.
        package var rangesSkipped = 0
        package var calls = 0
        /// ESRCH: the process exited (or was reaped) before or during the advice.
        package var processExited = false
    }

    /// Advises every range, IOV_MAX at a time. The kernel works through the ranges in order and
    /// stops at the first it refuses, returning the bytes done so far (or -1 when the very first
    /// range failed); it may also stop inside a range (it caps one call at about 2 GiB). So each
    /// call resumes right after what was done, and a refused range is skipped. EPERM before
    /// anything was advised means the call itself is not allowed (no CAP_SYS_NICE or ptrace access)
    /// and is thrown rather than counted range by range.
    package static func advise(pidfd: Int32, pid: pid_t, ranges: [Range], advice: Advice) throws(SystemError) -> Outcome {
        let ranges = ranges.filter { $0.length > 0 }
        var outcome = Outcome()
        var index = 0
        var doneInFirst: UInt64 = 0  // bytes of ranges[index] already advised
        var iov: [iovec] = []
        iov.reserveCapacity(maxRangesPerCall)
        while index < ranges.count {
            iov.removeAll(keepingCapacity: true)
            for i in index..<min(index + maxRangesPerCall, ranges.count) {
                let skip = i == index ? doneInFirst : 0
                let base = UnsafeMutableRawPointer(bitPattern: UInt(ranges[i].start + skip))
                iov.append(iovec(iov_base: base, iov_len: Int(ranges[i].length - skip)))
            }
            let n = iov.withUnsafeBufferPointer { buf in
                icebox_process_madvise(pidfd, buf.baseAddress!, buf.count, advice.rawValue)
            }
            outcome.calls += 1
            if n < 0 {
                let err = errno
                switch err {
                case EINTR: continue
                case ESRCH:
                    outcome.processExited = true
                    return outcome
                case EPERM where outcome.bytesAdvised == 0 && outcome.rangesSkipped == 0:
                    throw SystemError("process_madvise", path: "pid \(pid)", errno: err)
                case EINVAL, ENOMEM, EPERM, EAGAIN:
                    outcome.rangesSkipped += 1
                    index += 1
                    doneInFirst = 0
                    continue
                default:
                    throw SystemError("process_madvise", path: "pid \(pid)", errno: err)
                }
            }
            var left = UInt64(n)
            outcome.bytesAdvised += left
            if left == 0 {
                // No progress and no error: cannot happen for non-empty ranges, but never spin.
                outcome.rangesSkipped += 1
                index += 1
                doneInFirst = 0
            }
            while left > 0 && index < ranges.count {
                let remaining = ranges[index].length - doneInFirst
                if left >= remaining {
                    left -= remaining
                    index += 1
                    doneInFirst = 0
                    outcome.rangesAdvised += 1
                } else {
                    doneInFirst += left
                    left = 0
                }
            }
        }
        return outcome
    }
}

import Glibc
import IceboxSystem

/// One line of /proc/locks: a lock held, or (`isWaiter`) a request blocked on the lock of
/// the same id. The kernel prints (fs/locks.c, lock_get_status):
///
///     1: POSIX  ADVISORY  WRITE 1234 00:1f:5678 0 EOF
///     1: -> POSIX  ADVISORY  WRITE 4321 00:1f:5678 0 EOF
///     2: FLOCK  ADVISORY  WRITE 99 fd:01:1311 0 EOF
///     3: OFDLCK ADVISORY  READ  -1 fd:01:77 100 199
///     4: LEASE  ACTIVE    READ 812 fd:01:1400 0 EOF
///
/// A waiter blocked on a waiter is indented one more space per level (" -> ").
package struct FileLock: Equatable, Sendable, Codable {
    package enum Kind: String, Equatable, Sendable, Codable {
        case posix = "POSIX"  // fcntl(F_SETLK) and lockf: owned by the process
        case flock = "FLOCK"  // flock(2): owned by the open file description
        case ofd = "OFDLCK"  // fcntl(F_OFD_SETLK): owned by the open file description
        case lease = "LEASE"
        case delegation = "DELEG"  // an NFS server's delegation
        case access = "ACCESS"  // a transient check by the kernel itself
        case unknown = "UNKNOWN"
    }

    package enum Access: String, Equatable, Sendable, Codable {
        case read = "READ"
        case write = "WRITE"
        case unlock = "UNLCK"
    }

    /// Position in /proc/locks; a holder and the requests waiting on it share it.
    package var id: Int
    package var kind: Kind
    /// ADVISORY for locks; ACTIVE, BREAKING or BREAKER for leases; *NOINODE* without an inode.
    package var mode: String
    package var access: Access
    /// The process that took the lock (for FLOCK, the one that called flock); -1 for OFD
    /// locks, which belong to no process; 0 for a process outside this pid namespace.
    package var pid: pid_t
    /// The file system's device as major:minor in hex ("fd:01"), "<none>" without an inode.
    package var device: String
    package var inode: UInt64
    package var start: UInt64
    /// The last byte locked; nil for "to the end of the file" (EOF).
    package var end: UInt64?
    package var isWaiter: Bool

    package init(
        id: Int, kind: Kind, mode: String, access: Access, pid: pid_t, device: String, inode: UInt64, start: UInt64,
        end: UInt64?, isWaiter: Bool
    ) {
        self.id = id
        self.kind = kind
        self.mode = mode
        self.access = access
        self.pid = pid
        self.device = device
        self.inode = inode
        self.start = start
        self.end = end
        self.isWaiter = isWaiter
    }

    /// Whether two entries are about the same file.
    package func sameFile(as other: FileLock) -> Bool { device == other.device && inode == other.inode }
}

package enum FileLocks {
    package static let path = "/proc/locks"

    /// Parses one line; nil for a malformed one.
    package static func parse(line: Substring) -> FileLock? {
        var words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })[...]
        guard let idWord = words.popFirst(), idWord.hasSuffix(":"), let id = Int(idWord.dropLast()) else { return nil }
        let isWaiter = words.first == "->"
        if isWaiter { words.removeFirst() }
        guard words.count == 7, let kind = FileLock.Kind(rawValue: String(words[words.startIndex])) else { return nil }
        let w = Array(words)
        guard let access = FileLock.Access(rawValue: String(w[2])), let pid = pid_t(w[3]),
            let colon = w[4].lastIndex(of: ":"), let inode = UInt64(w[4][w[4].index(after: colon)...]),
            let start = UInt64(w[5])
        else { return nil }
        let end: UInt64?
        if w[6] == "EOF" {
            end = nil
        } else if let value = UInt64(w[6]) {
            end = value
        } else {
            return nil
        }
        return FileLock(
            id: id, kind: kind, mode: String(w[1]), access: access, pid: pid, device: String(w[4][..<colon]), inode: inode,
            start: start, end: end, isWaiter: isWaiter)
    }

    /// Parses the text of /proc/locks, skipping malformed lines.
    package static func parse(_ text: String) -> [FileLock] {
        text.split(separator: "\n").compactMap { parse(line: $0) }
    }

    package static func read(path: String = FileLocks.path) throws(SystemError) -> [FileLock] {
        parse(try FileIO.read(path))
    }

    /// The locks held by one of `pids` that a process outside `pids` is blocked on, each with
    /// its waiters. OFD locks show pid -1, so they are never attributed to an app here.
    package static func contended(heldBy pids: Set<pid_t>, in locks: [FileLock]) -> [(holder: FileLock, waiters: [FileLock])] {
        var waitersByID: [Int: [FileLock]] = [:]
        for lock in locks where lock.isWaiter && !pids.contains(lock.pid) {
            waitersByID[lock.id, default: []].append(lock)
        }
        var result: [(holder: FileLock, waiters: [FileLock])] = []
        for holder in locks where !holder.isWaiter && pids.contains(holder.pid) {
            let waiters = (waitersByID[holder.id] ?? []).filter { $0.sameFile(as: holder) }
            if !waiters.isEmpty { result.append((holder, waiters)) }
        }
        return result
    }
}

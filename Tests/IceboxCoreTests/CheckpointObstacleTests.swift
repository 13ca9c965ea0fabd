import Foundation
import Glibc
import IceboxSystem
import Testing

@testable import IceboxCore

/// `CheckpointObstacle.find`: what keeps CRIU from dumping an app, found from the kernel
/// (/proc/PID/fd and sock_diag) on real processes.
@Suite("What keeps an app from going to disk")
struct CheckpointObstacleTests {
    /// Spawns `python3 -c source` with `extraFD` as its descriptor 3 and its stdout on a pipe;
    /// returns it once it printed its first line (the line too).
    static func spawn(_ source: String, extraFD: Int32 = -1) throws -> (ProcessHandle, String) {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]) }
        var request = SpawnRequest(
            executable: "/usr/bin/python3", arguments: ["python3", "-c", source], environment: ["PATH=/usr/bin:/bin"])
        request.stdout = fds[1]
        request.extraFD = extraFD
        let spawned = Result { () throws(SpawnError) in try Spawner.spawn(request) }
        close(fds[1])
        let handle = try spawned.get().handle
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(fds[0], &byte, 1) == 1 && byte != UInt8(ascii: "\n") { line.append(byte) }
        return (handle, String(decoding: line, as: UTF8.self))
    }

    static func end(_ handle: ProcessHandle) {
        _ = try? handle.send(SIGKILL)
        _ = try? handle.wait(until: Clock.monotonicNanos() + 5_000_000_000)
    }

    @Test("a stream socketpair whose other end this process (outside the app) holds is found, with its holder")
    func socketToOutside() throws {
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        defer { close(pair[0]) }
        let spawned = Result { try Self.spawn("import time; print('up', flush=True); time.sleep(1000)", extraFD: pair[1]) }
        close(pair[1])
        let (app, line) = try spawned.get()
        defer { Self.end(app) }
        #expect(line == "up")
        let found = try CheckpointObstacle.find(pids: [app.pid])
        #expect(found.count == 1, "\(found)")
        guard case .streamSocketToOutside(let pid, let fd, _, _, let holder) = found.first else {
            Issue.record("not found: \(found)")
            return
        }
        #expect(pid == app.pid && fd == 3 && holder == getpid(), "\(found)")
    }

    @Test("a socketpair shared by two processes of the app, and a datagram one to outside, are not obstacles")
    func socketsInside() throws {
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        defer { close(pair[0]) }
        let source = """
            import os, socket, time
            a, b = socket.socketpair()
            child = os.fork()
            if child == 0:
                a.close()
                time.sleep(1000)
            b.close()
            print(child, flush=True)
            time.sleep(1000)
            """
        let spawned = Result { try Self.spawn(source, extraFD: pair[1]) }
        close(pair[1])
        let (app, line) = try spawned.get()
        defer { Self.end(app) }
        let child = try #require(pid_t(line), "\(line)")
        defer { kill(child, SIGKILL) }  // the orphan is reaped by this process's subreaper or init
        let found = try CheckpointObstacle.find(pids: [app.pid, child])
        #expect(found.isEmpty, "\(found)")
        // Half of the app: the same stream pair is then an obstacle (its peer is outside).
        let half = try CheckpointObstacle.find(pids: [app.pid])
        #expect(half.count == 1, "\(half)")
    }

    static let ioUringProbe = """
        import ctypes, time
        libc = ctypes.CDLL(None, use_errno=True)
        params = ctypes.create_string_buffer(120)
        fd = libc.syscall(425, 4, params)
        print(fd if fd >= 0 else 'errno %d' % ctypes.get_errno(), flush=True)
        time.sleep(1000)
        """

    /// Whether this kernel lets a process make an io_uring (io_uring_setup, syscall 425 on
    /// x86-64 and arm64; /proc/sys/kernel/io_uring_disabled may forbid it).
    static let ioUringAllowed: Bool = {
        guard let (handle, line) = try? spawn(ioUringProbe) else { return false }
        end(handle)
        return Int32(line) != nil
    }()

    @Test(
        "an io_uring descriptor is found",
        .enabled(if: ioUringAllowed, "io_uring_setup is refused here (io_uring_disabled, or no io_uring)"))
    func ioUring() throws {
        let (app, line) = try Self.spawn(Self.ioUringProbe)
        defer { Self.end(app) }
        let fd = try #require(Int32(line), "\(line)")
        let found = try CheckpointObstacle.find(pids: [app.pid])
        #expect(found == [.ioUring(pid: app.pid, fd: fd)], "\(found)")
    }
}

import Glibc
import IceboxTestSupport
import Testing

@testable import IceboxSystem

/// `SpawnRequest.newPIDNamespace`: the program is pid 1 of a PID namespace of its own and
/// leads its session there (what a CRIU dump and a restore with its pids free need), checked
/// from the host's /proc (NSpid, NSsid), and its end takes the namespace's other processes.
@Suite("Spawn into a new PID namespace", .enabled(if: getuid() == 0, "CLONE_NEWPID needs CAP_SYS_ADMIN"))
struct SpawnPIDNamespaceTests {
    /// Spawns `sh -c script` in a new PID namespace with its stdout on a pipe; returns the
    /// process and the first line it prints.
    static func spawn(_ script: String) throws -> (ProcessHandle, String) {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]) }
        var request = SpawnRequest(executable: "/bin/sh", arguments: ["sh", "-c", script], environment: ["PATH=/usr/bin:/bin"])
        request.stdout = fds[1]
        request.newPIDNamespace = true
        let spawned: SpawnedProcess
        do { spawned = try Spawner.spawn(request) } catch {
            close(fds[1])
            throw error
        }
        close(fds[1])
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(fds[0], &byte, 1) == 1 && byte != UInt8(ascii: "\n") { line.append(byte) }
        return (spawned.handle, String(decoding: line, as: UTF8.self))
    }

    /// A field of /proc/PID/status ("NSpid") as its tab-separated values.
    static func statusField(_ name: String, pid: pid_t) throws -> [String] {
        let status = try FileIO.read("/proc/\(pid)/status")
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix(name + ":") })
        return line.dropFirst(name.count + 1).split(whereSeparator: { $0 == "\t" || $0 == " " }).map(String.init)
    }

    static func end(_ handle: ProcessHandle) {
        _ = try? handle.send(SIGKILL)
        _ = try? handle.wait(until: Clock.monotonicNanos() + 5_000_000_000)
    }

    @Test("the program is pid 1 and its session's leader in a namespace of its own")
    func programIsPidOneAndSessionLeader() throws {
        let (handle, line) = try Self.spawn("echo $$; exec sleep 1000")
        defer { Self.end(handle) }
        #expect(line == "1", "the program saw its pid as \(line)")
        // From the host's /proc: the host pid, then 1 in its own namespace; the same for its
        // session (setsid in the namespace) and process group.
        #expect(try Self.statusField("NSpid", pid: handle.pid) == [String(handle.pid), "1"])
        #expect(try Self.statusField("NSsid", pid: handle.pid) == [String(handle.pid), "1"])
        #expect(try Self.statusField("NSpgid", pid: handle.pid) == [String(handle.pid), "1"])
        // Another namespace than this process's.
        var own = stat(), its = stat()
        #expect(stat("/proc/self/ns/pid", &own) == 0 && stat("/proc/\(handle.pid)/ns/pid", &its) == 0)
        #expect(own.st_ino != its.st_ino)
    }

    @Test("a process it forks is pid 2 there, and goes when pid 1 ends")
    func childrenEndWithIt() throws {
        let (handle, line) = try Self.spawn("sleep 1000 & echo $!; exec sleep 1000")
        defer { Self.end(handle) }
        #expect(line == "2", "the child's pid inside was \(line)")
        let children = try FileIO.read("/proc/\(handle.pid)/task/\(handle.pid)/children").split(whereSeparator: { $0 == " " || $0 == "\n" })
        let child = try #require(children.first.flatMap { pid_t($0) })
        #expect(try Self.statusField("NSpid", pid: child) == [String(child), "2"])
        Self.end(handle)
        // The kernel killed and reaped the namespace's other processes before pid 1 could be
        // reaped.
        #expect(!FileIO.exists("/proc/\(child)"), "pid \(child) outlived its namespace's pid 1")
    }
}

import Glibc
import IceboxSystem

/// A python3 child for memory and lock tests: spawned with its stdout on a pipe, so a test
/// can wait for the line that says it is ready. Killed and reaped in deinit, so it never
/// outlives the test, even one that fails half-way.
final class ScriptChild {
    let handle: ProcessHandle
    var pid: pid_t { handle.pid }
    private let stdoutFD: Int32
    private var buffered = ""

    static let python = FileIO.exists("/usr/bin/python3") ? "/usr/bin/python3" : "/usr/local/bin/python3"
    static var available: Bool { FileIO.exists(python) }

    /// Runs `python3 -c script args...`. `v1ProcsFD`: a v1 cgroup.procs it joins before execve.
    init(_ script: String, arguments: [String] = [], v1ProcsFD: Int32 = -1) throws {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw SystemError("create a pipe") }
        var request = SpawnRequest(
            executable: Self.python, arguments: ["python3", "-c", script] + arguments,
            environment: ["PATH=/usr/local/bin:/usr/bin:/bin", "PYTHONUNBUFFERED=1"])
        request.stdout = fds[1]
        request.v1ProcsFD = v1ProcsFD
        defer { close(fds[1]) }
        do {
            handle = try Spawner.spawn(request).handle
        } catch {
            close(fds[0])
            throw error
        }
        stdoutFD = fds[0]
    }

    /// Waits (bounded) until the child prints a line equal to `line`; false on time-out or EOF.
    func waitForLine(_ line: String, seconds: Double = 20) -> Bool {
        let deadline = Clock.monotonicNanos() + UInt64(seconds * 1e9)
        while true {
            while let newline = buffered.firstIndex(of: "\n") {
                let next = buffered[..<newline]
                buffered.removeSubrange(...newline)
                if next == line { return true }
            }
            let now = Clock.monotonicNanos()
            if now >= deadline { return false }
            var pfd = pollfd(fd: stdoutFD, events: Int16(POLLIN), revents: 0)
            _ = poll(&pfd, 1, Int32((deadline - now) / 1_000_000 + 1))
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = chunk.withUnsafeMutableBytes { read(stdoutFD, $0.baseAddress, $0.count) }
            if n == 0 { return false }
            if n > 0 { buffered += String(decoding: chunk[0..<n], as: UTF8.self) }
        }
    }

    /// Waits (bounded) until the process shows the given state letter in /proc/PID/stat
    /// ("T" once a SIGSTOP has landed).
    func waitForState(_ state: Character, seconds: Double = 10) -> Bool {
        let deadline = Clock.monotonicNanos() + UInt64(seconds * 1e9)
        while Clock.monotonicNanos() < deadline {
            if ProcFS.stat(pid: pid)?.state == state { return true }
            usleep(1_000)
        }
        return false
    }

    func stop() -> Bool { ((try? handle.send(SIGSTOP)) ?? false) && waitForState("T") }
    func resume() { _ = try? handle.send(SIGCONT) }

    /// SIGKILL (which also ends a stopped process) and reap.
    func kill() {
        _ = try? handle.send(SIGKILL)
        _ = try? handle.wait(until: Clock.monotonicNanos() + 10_000_000_000)
    }

    deinit {
        kill()
        close(stdoutFD)
    }

    static let mebibyte: UInt64 = 1 << 20
}

import Glibc
import IceboxSystem
import IceboxTestSupport
import Testing

/// TaskDirectory reads a process's threads through its /proc/PID/task kept open: the same
/// answers as the path reads, and nothing once the process it was opened for has gone.
struct TaskDirectoryTests {
    /// The calling thread's id, from /proc/thread-self ("PID/task/TID").
    static func threadID() -> pid_t? {
        var buf = [CChar](repeating: 0, count: 64)
        let n = readlink("/proc/thread-self", &buf, buf.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buf[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self).split(separator: "/").last.flatMap { pid_t($0) }
    }

    /// This test process (several threads: the test runner's): the kept directory lists its
    /// leader and this thread, every time from the start, and reads this thread running.
    @Test func listsAndReadsTheThreadsOfALiveProcess() throws {
        let me = getpid()
        let tasks = TaskDirectory(pid: me)
        let thread = try #require(Self.threadID(), "/proc/thread-self names this thread")
        for _ in 0..<2 {
            let listed = Set(tasks.threads())
            #expect(listed.contains(me) && listed.contains(thread), "each listing starts from the first entry")
        }
        #expect(tasks.state(of: thread) == "R", "this thread runs while it reads itself")
        #expect((tasks.count() ?? 0) >= 1)
    }

    /// A process of one thread: listed, read, counted; stopped, then reaped, after which the
    /// kept directory lists and reads nothing, whoever has the pid by then.
    @Test func readsNothingOnceItsProcessIsGone() throws {
        let child = try Spawner.spawn(SpawnRequest(executable: "/bin/sleep", arguments: ["sleep", "100"], environment: []))
        let pid = child.handle.pid
        defer {
            kill(pid, SIGKILL)
            _ = try? child.handle.wait(until: Clock.monotonicNanos() + 5_000_000_000)
        }
        let tasks = TaskDirectory(pid: pid)
        #expect(tasks.threads() == [pid])
        #expect(tasks.count() == 1)
        kill(pid, SIGSTOP)
        var stopped = false
        for _ in 0..<5000 where !stopped {
            stopped = tasks.state(of: pid) == "T"
            if !stopped { usleep(1000) }
        }
        #expect(stopped, "the stop is read through the kept directory")
        kill(pid, SIGKILL)
        _ = try child.handle.wait(until: Clock.monotonicNanos() + 5_000_000_000)
        #expect(tasks.threads().isEmpty, "reaped: nothing listed")
        #expect(tasks.state(of: pid) == nil, "reaped: nothing read")
        #expect(tasks.count() == nil)
    }

    /// A process that is not there: reads go by path and find nothing.
    @Test func aProcessNeverThereReadsNothing() {
        let tasks = TaskDirectory(pid: Int32.max)
        #expect(tasks.threads().isEmpty)
        #expect(tasks.state(of: Int32.max) == nil)
        #expect(tasks.count() == nil)
    }
}

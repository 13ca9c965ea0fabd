import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import IceboxTestSupport
import Testing

/// The daemon's loop failing (`DaemonStop.loopFailed`): its epoll_wait returns an error,
/// which only a bug of ours causes. The loop must not spin or sleep through it; the daemon
/// stops as on SIGTERM, leaving its apps as they are for the next daemon to re-adopt, gives up
/// its socket, and its run fails with the error, which `Supervisor.stop()` reports.
///
/// The fault is a real one: the engine's epoll descriptor is replaced (dup2) by /dev/null,
/// so the kernel answers the next epoll_wait with EINVAL.
@Suite(
    .serialized, .enabled(if: SupervisorHost.unavailableReason == nil, "\(SupervisorHost.unavailableReason ?? "")"),
    .timeLimit(.minutes(5)))
struct SupervisorLoopFailureTests {
    @Test("an epoll_wait that fails stops the engine: the app is left running, the socket removed, stop() names the error")
    func loopFailureLeavesTheAppsAndSaysWhy() throws {
        let supervisor = try Supervisor.start()
        defer { try? supervisor.stop() }
        let app = try supervisor.launch(LaunchOptions(name: "nap", command: ["sleep", "100000"]))
        let epollFD = try #require(Self.epollWatching(socketPath: supervisor.paths.controlSocket), "the engine's epoll descriptor")

        // Watched before the fault: the removal of the control socket says the loop has ended.
        // Refused (the user's instances are shared by all of their processes): looks every 10 ms.
        let watcher = try? Inotify()
        _ = try watcher?.addWatch(supervisor.paths.runtimeDir, mask: UInt32(IN_DELETE))
        let devNull = open("/dev/null", O_RDONLY | O_CLOEXEC)
        try #require(devNull >= 0)
        #expect(dup2(devNull, epollFD) == epollFD)
        close(devNull)
        // The loop may sleep in the old epoll_wait until something wakes it: a request does.
        // Its answer may be lost with the loop, which is not what this test is about.
        var client = IceboxClient(paths: supervisor.paths)
        client.timeout = .seconds(5)
        _ = try? client.ping()

        let socketGone = Self.waitForRemoval(of: supervisor.paths.controlSocket, watcher: watcher, seconds: 10)
        try #require(socketGone, "the control socket is removed once the loop has failed")
        // Left as it is: running, neither frozen nor stopped nor killed.
        #expect(Kernel.processState(app.pid).map { $0 == "S" || $0 == "R" } == true, "\(String(describing: Kernel.processState(app.pid)))")
        if let cgroup = app.cgroup {
            #expect(Kernel.cgroupEvents(cgroup)["frozen"] == "0")
            #expect(Kernel.cgroupProcs(cgroup) == [app.pid])
        }

        // stop() finds the engine ended, says why, and removes what it left (the app too).
        var said = ""
        do { try supervisor.stop() } catch { said = error.description }
        #expect(said.contains("the engine failed") && said.contains("wait for the daemon's events"), "\(said)")
        #expect(said.contains("epoll_wait"), "the system call that failed is named: \(said)")
        #expect(Kernel.waitUntil(seconds: 10) { Kernel.gone(app.pid) }, "the left app is killed with its cgroup by stop()")
        #expect(!FileIO.exists(supervisor.paths.runtimeDir) && !FileIO.exists(supervisor.paths.stateDir))
        if let root = supervisor.cgroupRoot { #expect(!FileIO.exists(root)) }
    }

    /// The epoll descriptor that watches the socket bound to `socketPath` (found through
    /// /proc/net/unix, /proc/self/fd and each epoll's /proc/self/fdinfo "tfd:" lines), or nil.
    /// Other tests running meanwhile make epoll instances of their own; this finds the
    /// engine's alone.
    static func epollWatching(socketPath: String) -> Int32? {
        let table = (try? FileIO.read("/proc/net/unix")) ?? ""
        let inodes = Set(
            table.split(separator: "\n").compactMap { line -> String? in
                let fields = line.split(separator: " ")
                return fields.count >= 8 && fields[7] == socketPath ? String(fields[6]) : nil
            })
        var socketFDs: Set<String> = []
        var epollFDs: [Int32] = []
        for name in (try? FileIO.list("/proc/self/fd")) ?? [] {
            guard let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + name) else { continue }
            if link == "anon_inode:[eventpoll]", let fd = Int32(name) { epollFDs.append(fd) }
            if link.hasPrefix("socket:["), inodes.contains(String(link.dropFirst(8).dropLast())) { socketFDs.insert(name) }
        }
        return epollFDs.first { fd in
            let info = (try? FileIO.read("/proc/self/fdinfo/\(fd)")) ?? ""
            return info.split(separator: "\n").contains { line in
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                return fields.count >= 2 && fields[0] == "tfd:" && socketFDs.contains(String(fields[1]))
            }
        }
    }

    /// Waits (on inotify, up to `seconds`) until `path` no longer exists.
    static func waitForRemoval(of path: String, watcher: Inotify?, seconds: UInt64) -> Bool {
        let deadline = Clock.monotonicNanos().saturatingAdd(seconds * 1_000_000_000)
        while FileIO.exists(path) {
            let now = Clock.monotonicNanos()
            guard now < deadline else { return false }
            Poll.nap(
                on: watcher?.fd ?? -1, events: Int16(POLLIN),
                timeoutNanos: watcher == nil ? min(deadline - now, 10_000_000) : deadline - now)
            _ = try? watcher?.read()
        }
        return true
    }
}

import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// Clients of our own uid (or root) that are broken or hostile: the daemon bounds what each
/// may cost it, cuts off the one that oversteps with a logged reason, and goes on serving.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct HostileClientTests {
    /// Sends one raw request line and reads the replies until the daemon closes (at most 10 s).
    static func exchange(_ box: Sandbox, _ line: String, fds: [Int32] = []) throws -> String {
        let fd = try UnixSocket.connect(path: box.runtimeDir + "/icebox.sock")
        defer { close(fd) }
        try UnixSocket.send(fd, Array((line + "\n").utf8), fds: fds)
        var out = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 1000) >= 0 else { break }
            if pfd.revents == 0 { continue }
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func daemonPID(_ box: Sandbox) throws -> pid_t? {
        let reply = try exchange(box, JSONLines.encode(ControlRequest.ping))
        guard let range = reply.range(of: "daemon pid ") else { return nil }
        return pid_t(reply[range.upperBound...].prefix { $0.isNumber })
    }

    static func openDescriptors(_ pid: pid_t) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    @Test("UInt64.max in every duration of launch, suspend's grace, terminate and policy set traps nothing")
    func hugeDurations() throws {
        let box = Sandbox("huge")
        defer { box.close() }
        #expect(try box.icebox(["launch", "first", "--", "sleep", "1000"]).status == 0)
        let pid = try #require(try Self.daemonPID(box))
        let max = UInt64.max

        let app = box.pythonApp(onNotice: "notify('EXTEND_TIMEOUT_USEC=18446744073709551615')")
        var options = LaunchOptions(name: "huge", command: ["python3", app])
        options.ready = .notify
        options.graceNanos = max
        options.maxGraceNanos = max
        options.readyTimeoutNanos = max
        options.compactAfterNanos = max
        options.watchdogNanos = max
        options.environment = ["PATH=/usr/bin:/bin"]
        let launched = try Self.exchange(box, JSONLines.encode(ControlRequest.launch(options: options)))
        #expect(launched.contains("launched"), "\(launched)")

        let policy = try Self.exchange(
            box,
            JSONLines.encode(
                ControlRequest.setPolicy(settings: [.evictionGrace(max), .compactAfter(max), .memoryBudget(max), .maxSuspended(Int.max)])))
        #expect(policy.contains("\"done\""), "\(policy)")
        // The app asks for an endless grace (EXTEND_TIMEOUT_USEC); a suspend with an endless
        // grace is cut short by the test's own evict below, so send it without waiting.
        let suspender = try UnixSocket.connect(path: box.runtimeDir + "/icebox.sock")
        defer { close(suspender) }
        try UnixSocket.send(suspender, Array((JSONLines.encode(ControlRequest.suspend(names: ["huge"])) + "\n").utf8))
        usleep(300_000)
        let terminate = try UnixSocket.connect(path: box.runtimeDir + "/icebox.sock")
        defer { close(terminate) }
        try UnixSocket.send(
            terminate, Array((JSONLines.encode(ControlRequest.terminate(names: ["first"], timeoutNanos: max)) + "\n").utf8))
        usleep(300_000)

        // The same daemon still answers: it did not crash (a crash would autostart another).
        #expect(try Self.daemonPID(box) == pid)
        let ps = try box.icebox(["ps"])
        #expect(ps.status == 0 && ps.stdout.contains("huge"), "\(ps.output)")
        let evicted = try box.icebox(["evict", "huge"])
        #expect(evicted.status == 0, "\(evicted.output)")
        #expect(try Self.daemonPID(box) == pid)
    }

    @Test("a client passing 100 descriptors without a newline is cut off and every descriptor closed")
    func descriptorPileUp() throws {
        let box = Sandbox("fds")
        defer { box.close() }
        #expect(try box.icebox(["launch", "idle", "--", "sleep", "1000"]).status == 0)
        let pid = try #require(try Self.daemonPID(box))
        let before = Self.openDescriptors(pid)
        let devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { close(devnull) }
        let fd = try UnixSocket.connect(path: box.runtimeDir + "/icebox.sock")
        defer { close(fd) }
        for _ in 0..<10 {
            // Ten descriptors with one byte each, never a newline.
            do { try UnixSocket.send(fd, Array("{".utf8), fds: Array(repeating: devnull, count: 10)) } catch { break }
        }
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        #expect(poll(&pfd, 1, 5_000) == 1, "the connection was not closed")
        // The daemon holds what it held before: the client's connection and its descriptors are gone.
        var after = Self.openDescriptors(pid)
        for _ in 0..<50 where after > before {
            usleep(20_000)
            after = Self.openDescriptors(pid)
        }
        #expect(after == before, "the daemon had \(before) descriptors open, now \(after)")
        #expect(box.events().contains { $0.kind == .daemon && $0.detail.contains("cut off") && $0.detail.contains("descriptors") })
        #expect(try box.icebox(["ps"]).stdout.contains("idle"))
    }

    @Test(
        "out of descriptors, the daemon stops watching the listener instead of spinning, and recovers",
        .enabled(if: FileManager.default.fileExists(atPath: "/usr/bin/prlimit"), "prlimit (util-linux) is not installed"))
    func acceptOutOfDescriptors() throws {
        let box = Sandbox("emfile")
        defer { box.close() }
        #expect(try box.icebox(["launch", "idle", "--", "sleep", "1000"]).status == 0)
        let pid = try #require(try Self.daemonPID(box))
        let open = Self.openDescriptors(pid)
        func limit(_ n: String) throws {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
            p.arguments = ["--pid", "\(pid)", "--nofile=\(n)"]
            try p.run()
            p.waitUntilExit()
            #expect(p.terminationStatus == 0)
        }
        let original = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
            .split(separator: "\n").first { $0.hasPrefix("Max open files") }?.split(separator: " ", omittingEmptySubsequences: true)
        let soft = original.map { String($0[3]) } ?? "1024"
        let hard = original.map { String($0[4]) } ?? "1024"
        // Room for two clients; the third waits in the listen queue, and accept fails with EMFILE.
        try limit("\(open + 2):\(hard)")
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        for _ in 0..<6 { held.append(try UnixSocket.connect(path: box.runtimeDir + "/icebox.sock")) }
        usleep(200_000)
        func cpuTicks() -> Int {
            let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
            let fields = stat[(stat.lastIndex(of: ")") ?? stat.startIndex)...].split(separator: " ")
            return (Int(fields[12]) ?? 0) + (Int(fields[13]) ?? 0)  // utime + stime
        }
        let t0 = cpuTicks()
        usleep(1_000_000)
        let used = cpuTicks() - t0
        print("daemon CPU while out of descriptors: \(used) ticks in 1 s")
        #expect(used < 30, "the daemon spun: \(used) ticks of CPU in one second")
        let logged = box.events().filter { $0.detail.contains("cannot accept control connections") }
        #expect(logged.count == 1, "\(logged.map(\.detail))")
        try limit("\(soft):\(hard)")
        for fd in held { close(fd) }
        held = []
        #expect(try Self.daemonPID(box) == pid)
        #expect(try box.icebox(["ps"]).stdout.contains("idle"))
    }

    @Test("a flood of notify datagrams from outside the app logs a handful of lines and stalls nothing")
    func notifyFlood() throws {
        let box = Sandbox("flood")
        defer { box.close() }
        let launched = try box.icebox(["launch", "--ready", "notify", "app", "--", "python3", box.pythonApp()])
        #expect(launched.status == 0, "\(launched.output)")
        let linesBefore = box.events().count
        let sock = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(sock) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let path = Array((box.runtimeDir + "/notify/app").utf8)
        withUnsafeMutableBytes(of: &addr.sun_path) { for (i, b) in path.enumerated() { $0[i] = b } }
        let message = Array("READY=1\nSTATUS=flood".utf8)
        var sent = 0
        let started = Date()
        while sent < 20_000 && Date().timeIntervalSince(started) < 30 {
            let n = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { a in
                    sendto(sock, message, message.count, 0, a, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            if n > 0 { sent += 1 } else { usleep(100) }
        }
        let took = Date().timeIntervalSince(started)
        #expect(sent == 20_000)
        #expect(try box.icebox(["suspend", "app"]).status == 0)
        #expect(try box.icebox(["resume", "app"]).status == 0)
        let added = box.events().count - linesBefore
        print("20000 foreign datagrams in \(Int(took * 1000)) ms: \(added) event lines (suspend and resume included)")
        // One line a second at most, plus the suspend's and resume's own few.
        #expect(added <= Int(took) + 12, "the event log grew by \(added) lines")
        // Every dropped datagram is counted in some line: what the last second held back is
        // logged when that second ends, even if no further message comes.
        func accounted() -> Int {
            box.events("app").filter { $0.detail.hasPrefix("dropped ") }.reduce(0) { total, e in
                let words = e.detail.split(separator: " ")
                return total + (words[1] == "a" ? 1 : Int(words[1]) ?? 0)
            }
        }
        let deadline = Date().addingTimeInterval(5)
        while accounted() < sent && Date() < deadline { usleep(50_000) }
        #expect(accounted() == sent, "dropped datagrams logged: \(accounted()) of \(sent)")
        #expect(box.events("app").contains { $0.detail.contains("messages (logged at most once a second") })
    }
}

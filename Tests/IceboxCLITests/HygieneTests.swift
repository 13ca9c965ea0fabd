import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// Nothing leaks: no descriptor into an app, no descriptor kept by the daemon after an app
/// ends, no zombie, no cgroup.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct HygieneTests {
    func descriptors(_ pid: pid_t) -> Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? [])
    }

    @Test("an app inherits only its standard input, output and error")
    func noDescriptorLeaksIntoApps() throws {
        let box = Sandbox()
        defer { box.close() }
        // dash lists its own descriptors: only 0, 1 and 2 may be open.
        let r = try box.icebox(["run", "--", "sh", "-c", "ls /proc/$$/fd"])
        #expect(r.status == 0, "\(r.output)")
        let fds = r.stdout.split(whereSeparator: \.isWhitespace).map(String.init).sorted()
        #expect(fds == ["0", "1", "2"], "the app saw descriptors \(fds)")
    }

    @Test("after apps come and go the daemon holds the same descriptors and has no zombie children")
    func daemonStaysClean() throws {
        let box = Sandbox()
        defer { box.close() }
        _ = try box.icebox(["launch", "anchor", "--", "sleep", "1000"])
        // ps keeps each app's memory counter open from then on (while descriptors are plenty):
        // anchor's is among those held before; each later app's must go with it.
        _ = try box.icebox(["ps"])
        let pid = try #require(box.daemonPID)
        // The connection of the launch above closes just after its reply: under load the
        // client can read the reply first. Take the snapshot once two reads agree.
        // Each parked spawn stand-in (one per kind of launch, on hosts with v1 hierarchies)
        // holds two: its pidfd and its socket. They are replaced as launches use them.
        func held() -> Int { descriptors(pid).count - 2 * box.standIns().count }
        var before = held()
        let stable = Date().addingTimeInterval(2)
        while Date() < stable {
            usleep(50_000)
            let again = held()
            if again == before { break }
            before = again
        }
        let app = box.pythonApp()
        for backend in ["cgroup2", "cgroup1", "signal"] {
            _ = try box.icebox(["launch", "--backend", backend, "--ready", "notify", "tmp", "--", "python3", app])
            _ = try box.icebox(["ps"])
            // Where the app has a memory counter, the daemon now holds it open.
            let counters =
                try box.apps()["tmp"].map { r in
                    [r.memoryV1.map { $0 + "/memory.usage_in_bytes" }, r.cgroup.map { $0 + "/memory.current" }].compactMap { $0 }
                } ?? []
            if let counter = counters.first(where: { FileManager.default.fileExists(atPath: $0) }) {
                let held = Kernel.descriptorTargets(pid)
                #expect(held.contains(counter), "\(counter) not among the daemon's descriptors \(held)")
            }
            _ = try box.icebox(["suspend", "tmp"])
            _ = try box.icebox(["resume", "tmp"])
            _ = try box.icebox(["evict", "tmp"])
        }
        _ = try box.icebox(["launch", "tree", "--", "sh", "-c", "sleep 1000 & (setsid sleep 1001 &); exec sleep 1002"])
        _ = try box.icebox(["terminate", "tree"])
        _ = try box.icebox(["run", "--", "true"])
        _ = try box.icebox(["launch", "--ready", "cmd:true", "probe", "--", "sleep", "1000"])
        _ = try box.icebox(["evict", "probe"])
        // The daemon closes a client's connection just after its last reply, so give it a
        // moment (bounded) to finish the last request before comparing.
        var after = held()
        let settle = Date().addingTimeInterval(2)
        while after != before && Date() < settle {
            usleep(10_000)
            after = held()
        }
        #expect(after == before, "descriptors before \(before), after \(after): \(descriptors(pid).sorted())")
        #expect(box.standIns().count <= 2, "more stand-ins parked than kinds of launch: \(box.standIns())")
        // No zombie among the daemon's children (orphans of the tree were reaped).
        let zombies = Kernel.children(of: pid, inState: "Z")
        #expect(zombies.isEmpty, "zombie children of the daemon: \(zombies)")
        // The apps' cgroups, where the sandbox has a cgroup root (the signal backend makes none).
        if let root = box.cgroupRoot {
            #expect(Set((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).contains("anchor"))
            #expect(!FileManager.default.fileExists(atPath: root + "/tmp"))
            #expect(!FileManager.default.fileExists(atPath: root + "/tree"))
        }
    }

    @Test("the daemon exits on its own once it has no apps left")
    func daemonExitsWhenIdle() throws {
        let box = Sandbox()
        defer { box.close() }
        _ = try box.icebox(["launch", "brief", "--", "sleep", "1000"])
        let pid = try #require(box.daemonPID)
        let handle = try ProcessHandle(adopting: pid)
        _ = try box.icebox(["terminate", "brief"])
        // Wait on the daemon's pidfd (it is not our child: poll for its exit).
        var pfd = pollfd(fd: handle.pidfd, events: Int16(POLLIN), revents: 0)
        let exited = poll(&pfd, 1, 10_000) == 1
        // What the daemon was doing is what a failure needs: its events and what it holds.
        #expect(
            exited,
            """
            the daemon did not exit within 10 s of its last app ending; its events: \
            \(box.events().map { "\($0.kind) \($0.app): \($0.detail)" }); its descriptors: \
            \(Kernel.descriptorTargets(pid))
            """)
    }

    @Test("hot start: READY=1 after a resume is logged as resume → ready")
    func resumeToReady() throws {
        let box = Sandbox()
        defer { box.close() }
        let app = box.pythonApp(extra: "signal.signal(signal.SIGUSR2, lambda s, f: notify('READY=1'))")
        _ = try box.icebox(["launch", "--ready", "notify", "--foreground-signal", "USR2", "hot", "--", "python3", app])
        _ = try box.icebox(["suspend", "hot"])
        _ = try box.icebox(["resume", "hot"])
        let deadline = Date().addingTimeInterval(5)
        while !box.events("hot").contains(where: { $0.detail.contains("hot start") }) && Date() < deadline { usleep(10_000) }
        #expect(box.events("hot").contains { $0.kind == .ready && $0.detail.contains("resume → ready") })
    }

    @Test("the daemon raises its own descriptor limit, and apps start with the caller's")
    func descriptorLimits() throws {
        let box = Sandbox()
        defer { box.close() }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", "ulimit -Sn 512 && exec \"$0\" run -- sh -c 'ulimit -n'", Sandbox.binary]
        p.environment = box.environment
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(text.trimmingCharacters(in: .whitespacesAndNewlines) == "512", "the app saw \(text)")
        let pid = try #require(box.daemonPID)
        let limits = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
        let line = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max open files") })
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        #expect(fields.count >= 5 && fields[3] == fields[4], "soft limit not raised to the hard one: \(line)")
    }
}

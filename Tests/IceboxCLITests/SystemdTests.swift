import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// systemd integration, for real: the units pass `systemd-analyze verify`, and the daemon
/// takes its control socket from socket activation (`systemd-socket-activate`, which speaks
/// sd_listen_fds as systemd does) and says READY=1 on NOTIFY_SOCKET.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct SystemdTests {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .path
    static let tool = "/usr/bin/systemd-socket-activate"

    @Test("the units verify with systemd-analyze", .enabled(if: FileManager.default.fileExists(atPath: "/usr/bin/systemd-analyze")))
    func unitsVerify() throws {
        let box = Sandbox("units")
        defer { box.close() }
        // ExecStart must name a binary that exists, and Documentation=man:icebox(1) a page man finds.
        let units = box.dir + "/units"
        try FileManager.default.createDirectory(atPath: units + "/man/man1", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.repo + "/man/icebox.1", toPath: units + "/man/man1/icebox.1")
        let service = try String(contentsOfFile: Self.repo + "/contrib/systemd/icebox.service", encoding: .utf8)
        try service.replacingOccurrences(of: "/usr/local/bin/icebox", with: Sandbox.binary)
            .write(toFile: units + "/icebox.service", atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(atPath: Self.repo + "/contrib/systemd/icebox.socket", toPath: units + "/icebox.socket")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/systemd-analyze")
        let man = FileManager.default.fileExists(atPath: "/usr/bin/man") ? [] : ["--man=no"]
        p.arguments = ["verify"] + man + [units + "/icebox.socket", units + "/icebox.service"]
        p.environment = ["MANPATH": units + "/man", "PATH": "/usr/bin:/bin"]
        let err = Pipe()
        p.standardError = err
        try p.run()
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "systemd-analyze verify: \(text)")
    }

    @Test(
        "socket activation: the daemon serves the socket it is given and says READY=1",
        .enabled(if: FileManager.default.fileExists(atPath: tool)))
    func socketActivation() throws {
        let box = Sandbox("activate")
        defer { box.close() }
        try FileManager.default.createDirectory(atPath: box.runtimeDir, withIntermediateDirectories: true)
        chmod(box.runtimeDir, 0o700)
        // Our own NOTIFY_SOCKET, as a service manager's: the daemon's READY=1 arrives here.
        let notifyPath = box.dir + "/notify.sock"
        let notifyFD = try UnixSocket.bindNotify(path: notifyPath)
        defer { close(notifyFD) }
        let socketPath = box.runtimeDir + "/icebox.sock"
        var args = [Self.tool, "--listen=" + socketPath, "--fdname=icebox"]
        // (No ICEBOX_CGROUP_ROOT where the sandbox has no cgroup root.)
        for key in ["ICEBOX_RUNTIME_DIR", "ICEBOX_STATE_DIR", "ICEBOX_CGROUP_ROOT"] {
            if let value = box.environment[key] { args += ["-E", "\(key)=\(value)"] }
        }
        args += ["-E", "NOTIFY_SOCKET=\(notifyPath)", Sandbox.binary, "daemon", "--foreground"]
        // Spawned with our own pidfd-based spawner, not Foundation's Process: that one reaps
        // with a blocking wait4 on a long-lived child and then misses other tests' children.
        let pipe = try PipePair()
        let (readEnd, writeEnd) = (pipe.readEnd, pipe.writeEnd)
        defer { close(readEnd) }
        var request = SpawnRequest(executable: Self.tool, arguments: args, environment: ["PATH=/usr/bin:/bin"])
        request.stderr = writeEnd
        let activator = try Spawner.spawn(request).handle
        close(writeEnd)
        defer {
            _ = try? activator.send(SIGKILL)
            _ = try? activator.wait(until: Clock.monotonicNanos() + 5_000_000_000)
        }
        // systemd-socket-activate says when it listens; only then may a client connect.
        var said = ""
        var buffer = [UInt8](repeating: 0, count: 512)
        let deadline = Clock.monotonicNanos() + 10_000_000_000
        while !said.contains("Listening on"), Clock.monotonicNanos() < deadline {
            guard ((try? Poll.wait(readEnd, events: Int16(POLLIN), timeoutNanos: 1_000_000_000)) ?? 0) > 0 else { continue }
            let n = read(readEnd, &buffer, buffer.count)
            if n <= 0 { break }
            said += String(decoding: buffer[0..<n], as: UTF8.self)
        }
        #expect(said.contains("Listening on"), "systemd-socket-activate: \(said)")
        // No daemon runs yet: the first connection starts it (no autostart from the client).
        let launched = try box.icebox(["launch", "--no-autostart", "sock", "--", "sleep", "1000"])
        #expect(launched.status == 0, "\(launched.output)")
        #expect(try box.apps()["sock"]?.state == .active)
        // The daemon is the process systemd-socket-activate exec'd into, and it said READY=1.
        #expect(
            Poll.ready(notifyFD, Int16(POLLIN)) || ((try? Poll.wait(notifyFD, events: Int16(POLLIN), timeoutNanos: 5_000_000_000)) ?? 0) > 0
        )
        let message = UnixSocket.receive(notifyFD)
        let fields = NotifyMessage.parse(message?.text ?? "")
        #expect(fields.ready, "the daemon's notification: \(message?.text ?? "none")")
        #expect(fields.fields["MAINPID"] == String(activator.pid))
        // Stopped, it leaves the socket file to the service manager that made it.
        #expect(try box.icebox(["daemon", "--stop", "--terminate-apps"]).status == 0)
        #expect((try? activator.wait(until: Clock.monotonicNanos() + 10_000_000_000)) ?? nil == .exited(0))
        #expect(FileManager.default.fileExists(atPath: socketPath), "the daemon removed a socket it did not create")
    }
}

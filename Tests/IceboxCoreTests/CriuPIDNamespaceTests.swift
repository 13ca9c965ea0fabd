import Foundation
import Glibc
import IceboxSystem
import IceboxTestSupport
import Testing

@testable import IceboxCore

/// Why an app that goes to disk gets a PID namespace of its own (issue 32, item 3): a tree
/// spawned with `SpawnRequest.newPIDNamespace` is dumped by the real criu and restored with
/// its pids inside kept (1 and 2) whatever host pids are free, as this process's child again
/// (`--restore-sibling`); checked from the host's /proc, then killed and reaped.
@Suite("CRIU and a PID namespace", .serialized)
struct CriuPIDNamespaceTests {
    static let criu: String? = {
        guard getuid() == 0 else { return nil }
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "ICEBOX_CRIU")
        let verdict = CriuProbe.run(environment: env, stateDir: nil)
        return verdict.works ? verdict.path : nil
    }()

    static func nsPids(_ pid: pid_t) -> [String] {
        let status = (try? FileIO.read("/proc/\(pid)/status")) ?? ""
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("NSpid:") }) else { return [] }
        return line.dropFirst("NSpid:".count).split(whereSeparator: { $0 == "\t" || $0 == " " }).map(String.init)
    }

    static func children(_ pid: pid_t) -> [pid_t] {
        ((try? FileIO.read("/proc/\(pid)/task/\(pid)/children")) ?? "").split(whereSeparator: { $0 == " " || $0 == "\n" })
            .compactMap { pid_t($0) }
    }

    @Test(
        "a tree in its own PID namespace is dumped and restored with pids 1 and 2 inside, as this process's child",
        .enabled(if: criu != nil, "no working criu here (>= 4.2 on Linux 6.16+), or not root (run scripts/criu as root to build one)"))
    func dumpAndRestoreKeepsPidsInside() throws {
        let criu = try #require(Self.criu)
        let images = makeTemporaryDirectory("criu-pidns")
        defer { removeTree(images) }
        // sh forks a sleep, says its pid inside (on a pipe: no polling), then moves its own
        // output to /dev/null, so that nothing in the tree holds a pipe to this process.
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]) }
        var request = SpawnRequest(
            executable: "/bin/sh",
            arguments: ["sh", "-c", "sleep 1000 </dev/null >/dev/null 2>&1 & echo $!; exec >/dev/null; wait"],
            environment: ["PATH=/usr/bin:/bin"])
        request.stdout = fds[1]
        request.newPIDNamespace = true
        let spawned = Result { () throws(SpawnError) in try Spawner.spawn(request) }
        close(fds[1])
        let app = try spawned.get().handle
        defer { CriuCanary.killAndReap(app) }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(fds[0], &byte, 1) == 1 && byte != UInt8(ascii: "\n") { line.append(byte) }
        #expect(String(decoding: line, as: UTF8.self) == "2", "the sleep's pid inside")
        let forked = try #require(Self.children(app.pid).first, "sh forked no sleep")
        #expect(Self.nsPids(app.pid) == [String(app.pid), "1"])
        #expect(Self.nsPids(forked) == [String(forked), "2"])

        let dump = try CriuCommand.run(
            criu, ["dump", "--tree", String(app.pid), "--images-dir", images, "--log-file", "dump.log"],
            timeoutNanos: 30_000_000_000)
        #expect(dump.succeeded, "\(CriuCanary.reason(dump, log: images + "/dump.log"))")
        guard dump.succeeded else { return }
        #expect(try app.wait(until: Clock.monotonicNanos() + 5_000_000_000) == .signaled(SIGKILL))
        #expect(!FileIO.exists("/proc/\(forked)"))

        let (restore, restored) = try CriuCommand.restore(criu, images: images, timeoutNanos: 30_000_000_000)
        defer { if let restored { CriuCanary.killAndReap(restored) } }
        #expect(restore.succeeded, "\(CriuCanary.reason(restore, log: images + "/restore.log"))")
        let root = try #require(restored)
        // From the host's /proc: pid 1 inside again (whatever its host pid), its child pid 2,
        // and this process its parent.
        #expect(Self.nsPids(root.pid).last == "1", "\(Self.nsPids(root.pid))")
        let stat = try FileIO.read("/proc/\(root.pid)/stat")
        #expect(CriuCanary.parentPid(inStat: stat) == getpid())
        let again = try #require(Self.children(root.pid).first)
        #expect(Self.nsPids(again).last == "2", "\(Self.nsPids(again))")
        CriuCanary.killAndReap(root)
        #expect(!FileIO.exists("/proc/\(root.pid)") && !FileIO.exists("/proc/\(again)"))
    }
}

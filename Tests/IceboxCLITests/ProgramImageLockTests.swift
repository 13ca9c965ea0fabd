import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// The daemon keeps its own program image in memory (mlock), and runs all the same, saying
/// so, where it may not.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"))
struct ProgramImageLockTests {
    /// A field of /proc/PID/status in kB ("VmLck:  4476 kB"), as KiB.
    static func statusKiB(_ pid: pid_t, _ key: String) -> UInt64? {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        return ProcFS.statusField(key, in: text).flatMap(ProcFS.parseKiloBytes).map { $0 / 1024 }
    }

    /// How much of the binary the daemon maps, in KiB: its mappings of that file (matched by
    /// inode, as the path may name it through a symbolic link), from /proc/PID/maps.
    static func mappedImageKiB(_ pid: pid_t, binary: String) -> UInt64 {
        var st = stat()
        guard stat(binary, &st) == 0 else { return 0 }
        let maps = (try? String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8)) ?? ""
        var total: UInt64 = 0
        for line in maps.split(separator: "\n") {
            // address perms offset dev inode path
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, UInt64(fields[4]) == UInt64(st.st_ino) else { continue }
            let range = fields[0].split(separator: "-")
            if let a = UInt64(range[0], radix: 16), let b = UInt64(range[1], radix: 16) { total += (b - a) / 1024 }
        }
        return total
    }

    @Test("the daemon locks its program image in memory and says how much")
    func locksItsImage() throws {
        let box = Sandbox()
        defer { box.close() }
        let launch = try box.icebox(["launch", "app", "--", "sleep", "1000"])
        #expect(launch.status == 0, "\(launch.output)")
        let daemon = try #require(box.daemonPID)
        let image = Self.mappedImageKiB(daemon, binary: Sandbox.binary)
        let locked = try #require(Self.statusKiB(daemon, "VmLck"))
        #expect(image > 0 && locked >= image, "VmLck \(locked) kB, the binary's mappings \(image) kB")
        let said = box.events().filter { $0.kind == .daemon && $0.detail.hasPrefix("program image locked in memory") }
        #expect(said.count == 1, "\(box.events().map(\.detail))")
    }

    @Test(
        "without CAP_IPC_LOCK and past RLIMIT_MEMLOCK the daemon runs, locks nothing and says why",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "needs setpriv (util-linux)"),
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit"), "needs prlimit (util-linux)"))
    func runsWithoutTheLock() throws {
        let box = Sandbox()
        defer { box.close() }
        // The autostarted daemon inherits the command's limit and capabilities.
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        p.arguments = [
            "--bounding-set=-ipc_lock", "/usr/bin/prlimit", "--memlock=1048576", Sandbox.binary, "launch", "app", "--", "sleep", "1000",
        ]
        p.environment = box.environment
        let launch = try Sandbox.runToEnd(p, timeout: 30, what: "icebox launch without CAP_IPC_LOCK")
        #expect(launch.status == 0, "\(launch.output)")
        let daemon = try #require(box.daemonPID)
        #expect(Self.statusKiB(daemon, "VmLck") == 0)
        let said = box.events().filter { $0.kind == .daemon && $0.detail.hasPrefix("could not lock the program image") }
        #expect(said.count == 1 && said[0].detail.contains("RLIMIT_MEMLOCK"), "\(box.events().map(\.detail))")
        #expect(try box.apps()["app"]?.state == .active)
    }
}

import Foundation
import Glibc
import IceboxCore
import Testing

/// Bad input: a clear one-line error, the documented exit code, and nothing left behind.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(2)))
struct ErrorTests {
    func nothingLeft(_ box: Sandbox, _ name: String) {
        #expect(!FileManager.default.fileExists(atPath: box.cgroupRoot + "/" + name), "cgroup left behind")
        #expect(!FileManager.default.fileExists(atPath: box.runtimeDir + "/notify/" + name), "notify socket left behind")
    }

    @Test("exec failures: 127 not found, 126 not executable, nothing left behind")
    func execFailures() throws {
        let box = Sandbox()
        defer { box.close() }
        let missing = try box.icebox(["launch", "nope", "--", "no-such-command-xyz"])
        #expect(missing.status == 127)
        #expect(missing.stderr.contains("command not found"))
        nothingLeft(box, "nope")
        let file = box.dir + "/not-executable"
        try "echo hi".write(toFile: file, atomically: true, encoding: .utf8)
        let noexec = try box.icebox(["run", "--name", "noexec", "--", file])
        #expect(noexec.status == 126)
        #expect(noexec.stderr.contains("Permission denied"))
        nothingLeft(box, "noexec")
    }

    @Test("usage errors exit 64 and name what was wrong")
    func usageErrors() throws {
        let box = Sandbox()
        defer { box.close() }
        let cases: [([String], String)] = [
            (["launch", "bad/name", "--", "true"], "invalid app name"),
            (["launch", "--grace", "soon", "x", "--", "true"], "invalid duration"),
            (["launch", "--background-signal", "SIGFOO", "x", "--", "true"], "unknown signal"),
            (["launch", "--backend", "magic", "x", "--", "true"], "unknown backend"),
            (["launch", "--ready", "http", "x", "--", "true"], "invalid --ready"),
            (["launch", "--ready", "http:http://example.com/", "x", "--", "true"], "do not resolve host names"),
            (["suspend"], "needs at least one app name"),
            (["frobnicate"], "unknown command"),
            (["ps", "--bogus"], "unknown option --bogus"),
        ]
        for (args, message) in cases {
            let r = try box.icebox(args)
            #expect(r.status == 64, "\(args): \(r.output)")
            #expect(r.stderr.contains(message), "\(args): \(r.stderr)")
        }
    }

    @Test("unknown apps, duplicate names and no daemon with autostart off")
    func operationalErrors() throws {
        let box = Sandbox()
        defer { box.close() }
        let off = try box.icebox(["suspend", "ghost"], extraEnv: ["ICEBOX_NO_AUTOSTART": "1"])
        #expect(off.status == 69)
        #expect(off.stderr.contains("no icebox daemon is running"))
        _ = try box.icebox(["launch", "dup", "--", "sleep", "1000"])
        let ghost = try box.icebox(["suspend", "ghost"])
        #expect(ghost.status == 1)
        #expect(ghost.stderr.contains("no app named 'ghost'"))
        let dup = try box.icebox(["launch", "dup", "--", "sleep", "1000"])
        #expect(dup.status == 1)
        #expect(dup.stderr.contains("already running"))
    }

    @Test("an unavailable backend exits 69 and says what is missing")
    func unavailableBackend() throws {
        let box = Sandbox()
        defer { box.close() }
        // A cgroup root outside any cgroup filesystem: cgroup2 cannot work there.
        let r = try box.icebox(
            ["launch", "--backend", "cgroup2", "x", "--", "true"],
            extraEnv: ["ICEBOX_CGROUP_ROOT": box.dir + "/not-a-cgroup"])
        #expect(r.status == 69, "\(r.output)")
        #expect(r.stderr.contains("backend cgroup2 is unavailable"))
    }

    @Test(
        "no permission on the cgroup root exits 77 and names the path",
        .enabled(if: OtherUser.available, "needs root and setpriv (util-linux)"))
    func permissionDenied() throws {
        let box = Sandbox()
        defer { box.close() }
        // nobody runs a copy of the binary in a directory it can reach (the checkout may sit
        // under one it cannot enter), with its own runtime and state directories there.
        let other = try OtherUser()
        defer { other.close() }
        var env = box.environment
        env["ICEBOX_RUNTIME_DIR"] = other.home + "/run"
        env["ICEBOX_STATE_DIR"] = other.home + "/state"
        let r = try other.icebox(["launch", "--backend", "cgroup2", "x", "--", "true"], environment: env)
        #expect(r.status == 77, "\(r.stderr)")
        #expect(r.stderr.contains(box.cgroupRoot), "\(r.stderr)")
        _ = try? other.icebox(["daemon", "--stop", "--terminate-apps"], environment: env)
    }

    @Test("two daemons side by side, each with its own app of the same name")
    func twoDaemons() throws {
        let a = Sandbox("twoA"), b = Sandbox("twoB")
        defer { a.close(); b.close() }
        #expect(try a.icebox(["launch", "same", "--", "sleep", "1000"]).status == 0)
        #expect(try b.icebox(["launch", "same", "--", "sleep", "1000"]).status == 0)
        #expect(try a.icebox(["suspend", "--grace", "0", "same"]).status == 0)
        #expect(try a.apps()["same"]?.state == .suspended)
        #expect(try b.apps()["same"]?.state == .active)
        #expect(try a.apps()["same"]?.pid != b.apps()["same"]?.pid)
    }
}

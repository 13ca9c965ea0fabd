import Foundation
import Glibc
import IceboxCore
import Testing

/// Bad input: a clear one-line error, the documented exit code, and nothing left behind.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct ErrorTests {
    func nothingLeft(_ box: Sandbox, _ name: String) {
        #expect(box.cgroupRoot.map { !FileManager.default.fileExists(atPath: $0 + "/" + name) } ?? true, "cgroup left behind")
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
        .enabled(if: OtherUser.available, "needs root and setpriv (util-linux)"),
        .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"))
    func permissionDenied() throws {
        let box = Sandbox()
        defer { box.close() }
        // nobody runs a copy of the binary in a directory it can reach (the checkout may sit
        // under one it cannot enter), with its own runtime and state directories there.
        let other = try OtherUser()
        defer { other.close() }
        let env = other.environment(of: box)
        let r = try other.icebox(["launch", "--backend", "cgroup2", "x", "--", "true"], environment: env)
        #expect(r.status == 77, "\(r.stderr)")
        #expect(r.stderr.contains(try #require(box.cgroupRoot)), "\(r.stderr)")
        _ = try? other.icebox(["daemon", "--stop", "--terminate-apps"], environment: env)
    }

    /// A cgroup root asked for (ICEBOX_CGROUP_ROOT) that no cgroup backend can use is an
    /// error that says why and what to do, not a silent fall back to another place or backend.
    @Test("an explicit cgroup root that cannot be used exits 69 with why, instead of falling back")
    func unusableExplicitRoot() throws {
        let box = Sandbox()
        defer { box.close() }
        let bad = box.dir + "/not-a-cgroup"
        let r = try box.icebox(["launch", "--grace", "0", "x", "--", "sleep", "100"], extraEnv: ["ICEBOX_CGROUP_ROOT": bad])
        #expect(r.status == 69, "\(r.output)")
        // Why, for the hierarchy this host has (none of them takes a plain directory).
        let why =
            Sandbox.mounts.unified != nil
            ? "\(bad) is not inside the cgroup2 filesystem"
            : Sandbox.mounts.freezerV1 != nil
                ? "\(bad) is not inside the v1 freezer hierarchy" : "no cgroup v1 freezer hierarchy is mounted"
        #expect(r.stderr.contains("the cgroup root \(bad) cannot be used: "), "\(r.stderr)")
        #expect(r.stderr.contains(why), "\(r.stderr)")
        #expect(r.stderr.contains("--backend signal"), "\(r.stderr)")
        #expect(try box.apps()["x"] == nil)
        let doctor = try box.icebox(["doctor", "--color", "never"], extraEnv: ["ICEBOX_CGROUP_ROOT": bad])
        #expect(doctor.status == 1 && doctor.stdout.contains("none: the cgroup root \(bad) cannot be used"), "\(doctor.output)")
        // Asked for by name, signal needs no cgroup root.
        let signal = try box.icebox(
            ["launch", "--backend", "signal", "--grace", "0", "y", "--", "sleep", "100"], extraEnv: ["ICEBOX_CGROUP_ROOT": bad])
        #expect(signal.status == 0, "\(signal.output)")
    }

    /// Root in a user namespace (`unshare -U -r` by an unprivileged user, as a rootless
    /// container runs) is root there only: doctor says the host's cgroups need delegation,
    /// and a refusal's hint does not tell it to "run as root".
    @Test(
        "root in a user namespace is told it is not the host's root (doctor, and the hint of 77)",
        .enabled(if: OtherUser.available, "needs root and setpriv (util-linux)"),
        .enabled(if: OtherUser.userNamespaceRefusal == nil, "\(OtherUser.userNamespaceRefusal ?? "")"),
        .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"))
    func rootInAUserNamespace() throws {
        let box = Sandbox()
        defer { box.close() }
        let other = try OtherUser()
        defer { other.close() }
        let env = other.environment(of: box)
        func inNamespace(_ args: [String]) throws -> Sandbox.Result {
            let p = other.process(["/usr/bin/unshare", "--user", "--map-root-user", "--", other.binary] + args, environment: env)
            return try Sandbox.runToEnd(p, timeout: 30, what: "icebox \(args.joined(separator: " ")) as root in a user namespace")
        }
        let root = "root inside a user namespace (uid_map 0 \(OtherUser.uid) 1: host uid \(OtherUser.uid)), not the host's root"
        let doctor = try inNamespace(["doctor", "--color", "never"])
        #expect(doctor.stdout.contains(root + ": the host's cgroups need delegation"), "\(doctor.output)")
        #expect(!doctor.stdout.contains("running as root: no delegation needed"), "\(doctor.stdout)")
        let r = try inNamespace(["launch", "--backend", "cgroup2", "x", "--", "true"])
        #expect(r.status == 77, "\(r.output)")
        #expect(r.stderr.contains(root) && !r.stderr.contains("run as root"), "\(r.stderr)")
        _ = try? inNamespace(["daemon", "--stop", "--terminate-apps"])
    }

    /// process_madvise on another process needs CAP_SYS_NICE: a daemon without it (dropped
    /// from its bounding set, so root's exec never gets it) is refused, and the hint says so.
    @Test("compact by a daemon without CAP_SYS_NICE exits 77 and names the capability")
    func compactWithoutSysNice() throws {
        let box = Sandbox()
        defer { box.close() }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: OtherUser.setpriv)
        p.arguments = ["--bounding-set=-sys_nice", "--inh-caps=-sys_nice", "--", Sandbox.binary, "daemon"]
        p.environment = box.environment
        let daemon = try Sandbox.runToEnd(p, timeout: 30, what: "icebox daemon without CAP_SYS_NICE")
        #expect(daemon.status == 0, "\(daemon.output)")
        #expect(try box.icebox(["launch", "--grace", "0", "web", "--", "sleep", "1000"]).status == 0)
        #expect(try box.icebox(["suspend", "web"]).status == 0)
        let r = try box.icebox(["compact", "--mode", "cold", "web"])
        #expect(r.status == 77, "\(r.output)")
        #expect(r.stderr.contains("CAP_SYS_NICE") && !r.stderr.contains("run as root"), "\(r.stderr)")
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

import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// `--user`: the app runs with the asked uid, gid and groups and nothing else (every
/// capability set empty, no_new_privs), read from the kernel's /proc/PID/status, while the
/// daemon keeps the capabilities it uses and no other.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct RunAsUserTests {
    /// /proc/PID/status as name → value (tabs between the ids, as the kernel writes them).
    static func status(_ pid: pid_t) throws -> [String: String] {
        let text = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return fields
    }

    /// Ids as /proc/PID/status lists them ("Uid: real effective saved fs").
    static func ids(_ text: String?) -> [UInt32] {
        (text ?? "").split(whereSeparator: { $0 == "\t" || $0 == " " }).compactMap { UInt32($0) }
    }

    /// Everything a --user app must show: these ids and no capability of any kind.
    static func expectConfined(_ pid: pid_t, uid: UInt32, gid: UInt32, groups: [UInt32]) throws {
        let s = try status(pid)
        #expect(ids(s["Uid"]) == [uid, uid, uid, uid], "Uid: \(s["Uid"] ?? "")")
        #expect(ids(s["Gid"]) == [gid, gid, gid, gid], "Gid: \(s["Gid"] ?? "")")
        #expect(Set(ids(s["Groups"])) == Set(groups), "Groups: \(s["Groups"] ?? "")")
        for set in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
            #expect(s[set] == "0000000000000000", "\(set): \(s[set] ?? "missing")")
        }
        #expect(s["NoNewPrivs"] == "1")
    }

    /// The capability names in a /proc/PID/status mask.
    static func capabilities(_ hex: String?) -> Set<String> {
        let mask = UInt64(hex ?? "", radix: 16) ?? 0
        return Set(Capabilities.allNames.enumerated().filter { mask & (1 << UInt64($0.offset)) != 0 }.map(\.element))
    }

    /// The crash tests' helpers: the daemon's pid, and a SIGKILL waited for through a pidfd.
    static let crash = CrashRecoveryTests()
    static func daemonPID(_ box: Sandbox) throws -> pid_t { try crash.daemonPID(box) }

    @Test(
        "--user nobody: its uid, gid and groups, every capability set empty, no_new_privs; the daemon keeps what it uses",
        .enabled(if: Sandbox.cgroupMissing == nil, "\(Sandbox.cgroupMissing ?? "")"))
    func nobody() throws {
        let box = Sandbox()
        defer { box.close() }
        let nobody = try #require(UserAccounts.user(named: "nobody"))
        let r = try box.icebox(["launch", "--user", "nobody", "--cwd", "/", "--grace", "0", "app", "--", "sleep", "1000"])
        #expect(r.status == 0, "\(r.output)")
        let record = try #require(try box.apps()["app"])
        let expectedGroups = UserAccounts.groups(of: "nobody", gid: nobody.gid)
        try Self.expectConfined(record.pid, uid: nobody.uid, gid: nobody.gid, groups: expectedGroups)
        #expect(record.runsAs?.uid == nobody.uid && record.runsAs?.user == "nobody", "\(String(describing: record.runsAs))")
        #expect(record.options.runAs == record.runsAs)
        let user = try box.icebox(["ps", "--format", "{{.Name}} {{.User}}", "app"])
        #expect(user.stdout == "app nobody:\(UserAccounts.groupName(id: nobody.gid) ?? "")\n", "\(user.output)")
        let spawn = try #require(box.events("app").first { $0.kind == .spawn })
        #expect(spawn.detail.contains("as uid \(nobody.uid) (nobody)") && spawn.detail.contains("no capabilities"), "\(spawn.detail)")

        // The daemon: the capabilities it uses, still there, and none of the others.
        let daemon = try Self.status(try Self.daemonPID(box))
        let effective = Self.capabilities(daemon["CapEff"])
        let kept = Set(DaemonCapabilities.kept.map(\.name))
        #expect(effective.isSubset(of: kept), "the daemon kept \(effective.subtracting(kept).sorted())")
        for needed in DaemonCapabilities.neededForUser + ["cap_kill", "cap_sys_ptrace"] {
            #expect(effective.contains(needed), "the daemon lost \(needed)")
        }
        #expect(!effective.contains("cap_sys_admin"))
        #expect(daemon["CapInh"] == "0000000000000000")
        #expect(Self.capabilities(daemon["CapBnd"]).contains("cap_sys_admin"), "the bounding set stays for root apps")

        // The lifecycle works on it: a freeze confirmed by the kernel, a thaw, an eviction
        // (signals to another user's process: CAP_KILL).
        let cgroup = try #require(Kernel.appCgroup(record))
        #expect(try box.icebox(["suspend", "app"]).status == 0)
        #expect(Kernel.frozen(cgroup))
        #expect(try box.icebox(["resume", "app"]).status == 0)
        #expect(!Kernel.frozen(cgroup))
        let evicted = try box.icebox(["evict", "app"])
        #expect(evicted.status == 0, "\(evicted.output)")
        #expect(!Kernel.alive(record.pid))
        #expect(try box.apps()["app"]?.state == .evicted)
    }

    @Test("doctor lists each capability the daemon keeps with why, those it drops, and what the running daemon has")
    func doctorCapabilities() throws {
        let box = Sandbox()
        defer { box.close() }
        #expect(try box.icebox(["launch", "d", "--", "sleep", "1000"]).status == 0)
        let r = try box.icebox(["doctor", "--json"])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], "\(r.output)")
        let findings = (report["findings"] as? [[String: Any]] ?? []).reduce(into: [String: String]()) {
            $0[$1["check"] as? String ?? ""] = $1["detail"] as? String
        }
        for cap in DaemonCapabilities.kept {
            #expect(findings[cap.name]?.hasSuffix(cap.why) == true, "\(cap.name): \(findings[cap.name] ?? "missing")")
        }
        #expect(findings["dropped by the daemon"]?.contains("cap_sys_module") == true)
        #expect(findings["--user"]?.hasPrefix("apps can run as another user") == true)
        let running = try #require(findings["running daemon"])
        #expect(
            running.hasPrefix("pid \(try Self.daemonPID(box)) has ") && running.contains("cap_setuid") && !running.contains("cap_sys_admin")
        )
    }

    @Test("an app launched without --user still runs as root with root's capabilities, and says so")
    func rootApp() throws {
        let box = Sandbox()
        defer { box.close() }
        #expect(try box.icebox(["launch", "plain", "--", "sleep", "1000"]).status == 0)
        let record = try #require(try box.apps()["plain"])
        let s = try Self.status(record.pid)
        #expect(Self.ids(s["Uid"]) == [0, 0, 0, 0])
        #expect(Self.capabilities(s["CapEff"]).contains("cap_sys_admin"), "CapEff \(s["CapEff"] ?? "")")
        #expect(s["NoNewPrivs"] == "0")
        #expect(record.runsAs?.uid == 0 && record.options.runAs == nil)
        #expect(try box.icebox(["ps", "--format", "{{.User}}", "plain"]).stdout.hasPrefix("root:"))
    }

    @Test("--user 65534:65534 takes the numbers as they are: no lookup, no supplementary groups")
    func numeric() throws {
        let box = Sandbox()
        defer { box.close() }
        let r = try box.icebox(["launch", "--user", "65534:65534", "--cwd", "/", "num", "--", "sleep", "1000"])
        #expect(r.status == 0, "\(r.output)")
        let record = try #require(try box.apps()["num"])
        try Self.expectConfined(record.pid, uid: 65534, gid: 65534, groups: [])
        #expect(record.runsAs == RunAs(uid: 65534, gid: 65534))
        #expect(try box.icebox(["ps", "--format", "{{.User}}", "num"]).stdout == "65534:65534\n")
    }

    @Test(
        "a user with supplementary groups gets exactly those (a temporary user and groups)",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/sbin/useradd"), "useradd (passwd) is not installed"))
    func supplementaryGroups() throws {
        let box = Sandbox()
        let tag = String(getpid() % 100_000)
        let (primary, extraA, extraB, user) = ("icbp\(tag)", "icba\(tag)", "icbb\(tag)", "icbu\(tag)")
        defer {
            // The apps first: userdel refuses a user that still has processes.
            box.close()
            let removed = try? Sandbox.runToEnd(Self.tool("/usr/sbin/userdel", [user]), timeout: 20, what: "userdel")
            #expect(removed?.status == 0 && UserAccounts.user(named: user) == nil, "userdel \(user): \(removed?.output ?? "")")
            for g in [primary, extraA, extraB] {
                _ = try? Sandbox.runToEnd(Self.tool("/usr/sbin/groupdel", [g]), timeout: 20, what: "groupdel")
            }
        }
        for g in [primary, extraA, extraB] {
            let made = try Sandbox.runToEnd(Self.tool("/usr/sbin/groupadd", [g]), timeout: 20, what: "groupadd")
            try #require(made.status == 0, "groupadd \(g): \(made.output)")
        }
        let made = try Sandbox.runToEnd(
            Self.tool("/usr/sbin/useradd", ["-M", "-N", "-s", "/usr/sbin/nologin", "-g", primary, "-G", "\(extraA),\(extraB)", user]),
            timeout: 20, what: "useradd")
        try #require(made.status == 0, "useradd: \(made.output)")
        let uid = try #require(UserAccounts.user(named: user)?.uid)
        let gids = try [primary, extraA, extraB].map { try #require(UserAccounts.group(named: $0)) }

        let r = try box.icebox(["launch", "--user", user, "--cwd", "/", "grp", "--", "sleep", "1000"])
        #expect(r.status == 0, "\(r.output)")
        let record = try #require(try box.apps()["grp"])
        try Self.expectConfined(record.pid, uid: uid, gid: gids[0], groups: gids)

        // USER:GROUP: another primary group; the supplementary ones are it and the groups
        // that list the user (getgrouplist), not the passwd entry's group any more.
        let other = try box.icebox(["launch", "--user", "\(user):\(extraB)", "--cwd", "/", "grp2", "--", "sleep", "1000"])
        #expect(other.status == 0, "\(other.output)")
        let second = try #require(try box.apps()["grp2"])
        try Self.expectConfined(second.pid, uid: uid, gid: gids[2], groups: [gids[1], gids[2]])
    }

    static func tool(_ path: String, _ arguments: [String]) -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = arguments
        return p
    }

    @Test("READY=1 from an app run as another user arrives; its socket is that user's alone, and goes with the app")
    func notifyAsUser() throws {
        let box = Sandbox()
        defer { box.close() }
        let script = """
            import os, socket, time
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            s.sendto(b'READY=1\\nSTATUS=up as ' + str(os.getuid()).encode(), os.environ['NOTIFY_SOCKET'])
            print(os.environ['NOTIFY_SOCKET'], flush=True)
            time.sleep(1000)
            """
        let r = try box.icebox([
            "launch", "--user", "nobody", "--cwd", "/", "--ready", "notify", "--ready-timeout", "10s", "svc", "--",
            "/usr/bin/python3", "-c", script,
        ])
        #expect(r.status == 0, "\(r.output)")
        let record = try #require(try box.apps()["svc"])
        #expect(record.state == .active)
        #expect(record.statusText == "up as 65534")
        let socket = try #require(record.notifySocket)
        let dir = String(socket.dropLast("/notify".count))
        let socketStatus = try #require(try FileIO.linkStatus(socket))
        #expect(socketStatus.kind == .socket && socketStatus.owner == 65534 && socketStatus.permissions & 0o777 == 0o600)
        let dirStatus = try #require(try FileIO.linkStatus(dir))
        #expect(dirStatus.owner == 0 && dirStatus.permissions & 0o7777 == 0o711, "\(dir)")
        // The runtime directory stays closed.
        #expect(try #require(try FileIO.linkStatus(box.runtimeDir)).permissions & 0o777 == 0o700)

        // Another user cannot send to it at all (the socket is 0600, nobody's).
        let stranger = Process()
        stranger.executableURL = URL(fileURLWithPath: OtherUser.setpriv)
        stranger.arguments = [
            "--reuid=12345", "--regid=12345", "--clear-groups", "/usr/bin/python3", "-c",
            "import socket, sys\ntry:\n  socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'STATUS=spoofed', sys.argv[1])\nexcept PermissionError:\n  sys.exit(13)",
            socket,
        ]
        let sent = try Sandbox.runToEnd(stranger, timeout: 20, what: "send as uid 12345")
        #expect(sent.status == 13, "\(sent.output)")

        #expect(try box.icebox(["terminate", "svc"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: dir), "\(dir) is left behind")
    }

    @Test("after a daemon is killed, the next one re-binds the app's own socket for that user, and READY=1 still arrives")
    func adoptedAfterCrash() throws {
        let box = Sandbox()
        defer { box.close() }
        let script = """
            import os, signal, socket, time
            def notify(m): socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(m, os.environ['NOTIFY_SOCKET'])
            signal.signal(signal.SIGUSR1, lambda *a: notify(b'READY=1\\nSTATUS=saved'))
            notify(b'READY=1')
            while True: time.sleep(0.05)
            """
        let r = try box.icebox([
            "launch", "--user", "nobody", "--cwd", "/", "--ready", "notify", "--ready-timeout", "10s", "--grace", "20s", "svc", "--",
            "/usr/bin/python3", "-c", script,
        ])
        #expect(r.status == 0, "\(r.output)")
        let before = try #require(try box.apps()["svc"])
        let socket = try #require(before.notifySocket)
        // Should no daemon come back, nothing else removes the socket's directory in /tmp.
        defer {
            unlink(socket)
            rmdir(String(socket.dropLast("/notify".count)))
        }
        try Self.crash.killDaemon(box)
        // ps starts a daemon, which re-adopts the app.
        let after = try #require(try box.apps()["svc"])
        #expect(after.state == .active && after.pid == before.pid && after.notifySocket == socket)
        let status = try #require(try FileIO.linkStatus(socket))
        #expect(status.owner == 65534 && status.permissions & 0o777 == 0o600)
        // The notice's answer comes through the re-bound socket: the grace (20 s) ends early.
        let suspended = try box.icebox(["suspend", "svc"])
        #expect(suspended.status == 0 && suspended.stdout.contains("(READY=1)"), "\(suspended.output)")
        #expect(try box.apps()["svc"]?.statusText == "saved")
    }

    @Test("a cmd: readiness probe runs as the app's user too, never with more than the app has")
    func probeAsUser() throws {
        let box = Sandbox()
        defer { box.close() }
        let probe = "cmd:test \"$(id -u)\" = 65534 && grep -q '^CapEff:.*0000000000000000' /proc/self/status"
        let r = try box.icebox([
            "launch", "--user", "nobody", "--cwd", "/", "--ready", probe, "--ready-timeout", "5s", "probed", "--", "sleep", "1000",
        ])
        #expect(r.status == 0, "\(r.output)")
        #expect(try box.apps()["probed"]?.state == .active)
    }

    @Test("a bad --user is a usage error (64) that says what was wrong")
    func badUser() throws {
        let box = Sandbox()
        defer { box.close() }
        let cases: [(String, String)] = [
            ("no-such-user-icebox", "no user named 'no-such-user-icebox'"),
            ("nobody:no-such-group-icebox", "no group named 'no-such-group-icebox'"),
            ("", "no user"), ("nobody:", "no group after ':'"), (":65534", "no user"),
            ("3999999999", "uid 3999999999 has no entry in the user database"),
        ]
        for (value, message) in cases {
            let r = try box.icebox(["launch", "--user", value, "--cwd", "/", "x", "--", "sleep", "1"])
            #expect(r.status == 64, "--user '\(value)': \(r.output)")
            #expect(r.stderr.contains(message), "--user '\(value)': \(r.stderr)")
        }
        #expect(try box.apps()["x"] == nil)
    }

    @Test("a working directory the user cannot enter fails the launch; the program never runs")
    func unreachableDirectory() throws {
        let box = Sandbox()
        defer { box.close() }
        let closed = box.dir + "/closed"
        mkdir(closed, 0o700)
        let marker = box.dir + "/ran"
        let r = try box.icebox(["launch", "--user", "nobody", "--cwd", closed, "x", "--", "/bin/sh", "-c", "touch \(marker)"])
        #expect(r.status == 126, "\(r.output)")
        #expect(r.stderr.contains("chdir to \(closed) failed: Permission denied"), "\(r.stderr)")
        #expect(r.stderr.contains("the app's user must be able to enter it (the app runs as nobody:"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: marker))
    }

    @Test(
        "a daemon that cannot change identities refuses --user with exit 77",
        .enabled(if: OtherUser.available, "needs setpriv (util-linux) to act as another user"))
    func unprivilegedDaemon() throws {
        let other = try OtherUser()
        defer { other.close() }
        let env = [
            "PATH": "/usr/bin:/bin", "HOME": other.home, "ICEBOX_RUNTIME_DIR": other.home + "/run",
            "ICEBOX_STATE_DIR": other.home + "/state",
        ]
        defer { _ = try? other.icebox(["daemon", "--stop", "--terminate-apps"], environment: env) }
        let r = try other.icebox(["launch", "--user", "65534:65534", "--cwd", "/", "x", "--", "sleep", "1"], environment: env)
        #expect(r.status == 77, "\(r.output)")
        #expect(r.stderr.contains("lacks cap_setuid, cap_setgid, cap_setpcap, cap_chown"), "\(r.stderr)")
    }
}

import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// Crash safety and lost writes (issue 9): the record comes before the act, a record that
/// cannot be written fails the command with nothing left half done, and the next daemon finds
/// every app by its marks, record or not, and removes every empty leftover cgroup.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct DurabilityTests {
    /// SIGKILLs the running daemon and waits (through a pidfd) until it is gone.
    func killDaemon(_ box: Sandbox) throws {
        let pid = try #require(box.daemonPID)
        guard let handle = try? ProcessHandle(adopting: pid) else { return }
        kill(pid, SIGKILL)
        var pfd = pollfd(fd: handle.pidfd, events: Int16(POLLIN), revents: 0)
        #expect(poll(&pfd, 1, 5000) == 1, "the daemon did not die")
    }

    /// What is wrong between what a fresh daemon says (`ps`) and what the kernel has under
    /// the sandbox's cgroup root (if it has one): cgroups no live app claims (empty or not),
    /// and live apps whose suspended state differs from their cgroup's frozen state.
    func problems(_ box: Sandbox) throws -> [String] {
        let apps = try box.apps()
        let live = apps.values.filter { !$0.state.isEnded }
        var out: [String] = []
        let claimed = Set(live.compactMap(\.cgroup) + live.compactMap(\.freezerV1))
        // (The signal backend makes no cgroups: nothing to look at.)
        if let root = box.cgroupRoot {
            for child in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [] {
                let path = root + "/" + child
                // The daemon's own (its v1 freezer key hold, its parked stand-ins) start with a dot.
                if child.hasPrefix(".") { continue }
                guard FileManager.default.fileExists(atPath: path + "/cgroup.procs"), !claimed.contains(path) else { continue }
                let pids = Sandbox.pids(in: path)
                out.append(pids.isEmpty ? "empty leftover cgroup \(child)" : "untracked processes \(pids) in \(child)")
            }
        }
        for app in live {
            // The freezer of the app's backend (the signal backend's stop is not checked here).
            let frozen = app.cgroup.map(Kernel.cgroupFrozen) ?? app.freezerV1.map { Kernel.freezerState($0) == "FROZEN" }
            if let frozen, (app.state == .suspended) != frozen {
                out.append("\(app.name): ps says \(app.state.rawValue), cgroup frozen: \(frozen)")
            }
            if !Kernel.alive(app.pid) { out.append("\(app.name): ps says \(app.state.rawValue), pid \(app.pid) is gone") }
        }
        return out
    }

    @Test("a daemon killed 0–40 ms into a launch leaves no empty cgroup and no untracked app")
    func crashDuringLaunch() throws {
        let box = Sandbox()
        defer { box.close() }
        // An app keeps the daemon from exiting when idle, and is itself checked each time.
        _ = try box.icebox(["launch", "--grace", "0", "keep", "--", "sleep", "1000"])
        var found: [String] = []
        for trial in 0..<12 {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: Sandbox.binary)
            p.arguments = ["launch", "--grace", "0", "--no-autostart", "t\(trial)", "--", "sleep", "1000"]
            p.environment = box.environment
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            usleep(UInt32(trial * 40_000 / 12))
            try killDaemon(box)
            p.waitUntilExit()
            found += try problems(box).map { "trial \(trial): \($0)" }
        }
        #expect(found.isEmpty, "\(found)")
    }

    @Test(
        "an app whose record is gone is found by its marks and adopted; empty leftovers and half-done launches are cleared",
        .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"))
    func unrecordedApps() throws {
        let box = Sandbox()
        defer { box.close() }
        // A launch recorded but never spawned: its record has no pid, its cgroup is empty.
        _ = try box.icebox(["launch", "--grace", "0", "halfway", "--", "sleep", "1000"])
        let halfwayCgroup = try #require(try box.apps()["halfway"]?.cgroup)
        _ = try box.icebox(["daemon", "--stop", "--terminate-apps"])
        let recordPath = box.stateDir + "/registry/halfway.json"
        var json = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: recordPath))) as? [String: Any])
        json["state"] = "launching"
        json["pid"] = 0
        try JSONSerialization.data(withJSONObject: json).write(to: URL(fileURLWithPath: recordPath))
        // (The stopped daemon removed its cgroup root too.)
        try FileManager.default.createDirectory(atPath: halfwayCgroup, withIntermediateDirectories: true)
        let cgroupRoot = try #require(box.cgroupRoot)
        // Empty leftovers of a crash, one with a sub-cgroup.
        for dir in ["leftover", "leftover2", "leftover2/sub"] { #expect(mkdir(cgroupRoot + "/" + dir, 0o755) == 0) }
        // An app with this daemon's marks in its cgroup and no record at all, and one with
        // another daemon's marks (its own notify socket), which must be left alone.
        func spawnMarked(_ name: String, socket: String) throws -> Process {
            let cgroup = cgroupRoot + "/" + name
            #expect(mkdir(cgroup, 0o755) == 0)
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/bin/sh")
            p.arguments = ["-c", "echo $$ > \(cgroup)/cgroup.procs && exec sleep 1000"]
            p.environment = ["ICEBOX_APP_NAME": name, "NOTIFY_SOCKET": socket, "PATH": "/usr/bin:/bin"]
            try p.run()
            let deadline = Date().addingTimeInterval(5)
            while Sandbox.pids(in: cgroup).isEmpty && Date() < deadline { usleep(2_000) }
            return p
        }
        let orphan = try spawnMarked("orphan", socket: box.runtimeDir + "/notify/orphan")
        let stranger = try spawnMarked("stranger", socket: "/elsewhere/notify/stranger")
        defer {
            kill(stranger.processIdentifier, SIGKILL)
            stranger.waitUntilExit()
        }
        usleep(20_000)  // the shell has exec'd sleep

        let apps = try box.apps()  // a new daemon starts and looks
        let adopted = try #require(apps["orphan"], "the app with no record was not found: \(apps.keys.sorted())")
        #expect(adopted.state == .active)
        #expect(adopted.pid == orphan.processIdentifier)
        #expect(adopted.cgroup == cgroupRoot + "/orphan")
        #expect(adopted.options.command == ["sleep", "1000"])
        #expect(apps["halfway"]?.state == .exited)
        #expect(apps["halfway"]?.ending?.contains("launch interrupted") == true, "\(String(describing: apps["halfway"]?.ending))")
        #expect(!FileManager.default.fileExists(atPath: halfwayCgroup))
        #expect(!FileManager.default.fileExists(atPath: cgroupRoot + "/leftover"))
        #expect(!FileManager.default.fileExists(atPath: cgroupRoot + "/leftover2"))
        #expect(apps["stranger"] == nil)
        #expect(Kernel.alive(stranger.processIdentifier), "another daemon's app was killed")
        // Controllable like any other app, and its state is the kernel's.
        let s = try box.icebox(["suspend", "orphan"])
        #expect(s.status == 0, "\(s.output)")
        #expect(Kernel.cgroupFrozen(cgroupRoot + "/orphan"))
        // A crash now: the next daemon keeps it suspended (never thawed on a guess), even
        // without its record.
        try killDaemon(box)
        try FileManager.default.removeItem(atPath: box.stateDir + "/registry/orphan.json")
        // (ps starts a daemon only for apps the registry lists; a launch starts one.)
        let other = try box.icebox(["launch", "--grace", "0", "other", "--", "sleep", "1000"])
        #expect(other.status == 0, "\(other.output)")
        #expect(try box.apps()["orphan"]?.state == .suspended)
        #expect(Kernel.cgroupFrozen(cgroupRoot + "/orphan"))
        let e = try box.icebox(["evict", "orphan"])
        #expect(e.status == 0, "\(e.output)")
        orphan.waitUntilExit()
    }

    /// A record whose file already ends with its launch-time part gets its head rewritten in
    /// place (no new block needed), so a full disk stops only what needs a new file: a launch,
    /// or a record whose file is not in that form (one an older icebox wrote, or edited by hand).
    @Test(
        "with the state directory full, launch and a suspend whose record needs a new file fail (exit 74) with nothing done, one rewritten in place succeeds, and ps tells the truth",
        .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"))
    func fullStateDirectory() throws {
        let box = Sandbox()
        defer { box.close() }
        try FileManager.default.createDirectory(atPath: box.stateDir, withIntermediateDirectories: true)
        let mount = try box.run("/bin/mount", ["-t", "tmpfs", "-o", "size=512k,mode=0700", "tmpfs", box.stateDir])
        try #require(mount.status == 0, "cannot mount a tmpfs: \(mount.output)")
        defer {
            _ = try? box.icebox(["daemon", "--stop", "--terminate-apps"], timeout: 20)
            _ = try? box.run("/bin/umount", ["-l", box.stateDir])
        }
        // steady's record is more than a page (its environment), small's is not; both are
        // rewritten in place from now on, as long as their files keep the daemon's form.
        let pad = "PAD=" + String(repeating: "x", count: 6000)
        let up = try box.icebox(["launch", "--grace", "0", "--env", pad, "steady", "--", "sleep", "1000"])
        try #require(up.status == 0, "\(up.output)")
        let steady = try #require(try box.apps()["steady"])
        let upSmall = try box.icebox(["launch", "--grace", "0", "small", "--", "sleep", "1000"])
        try #require(upSmall.status == 0, "\(upSmall.output)")
        // steady's file as an older icebox wrote it (the plain JSON line): its next record needs a new file.
        let steadyPath = box.stateDir + "/registry/steady.json"
        let saved = try #require(JSONLines.decode(AppRecord.self, try String(contentsOfFile: steadyPath, encoding: .utf8)))
        try JSONLines.encode(saved).write(toFile: steadyPath, atomically: true, encoding: .utf8)
        let small = try #require(try box.apps()["small"])
        // Fill the file system to the last block.
        let fill = try box.run("/bin/sh", ["-c", "cat /dev/zero > \(box.stateDir)/filler 2>/dev/null; df \(box.stateDir)"])
        #expect(fill.stdout.contains("100%"), "\(fill.output)")

        let s = try box.icebox(["suspend", "steady"])
        #expect(s.status == 74, "\(s.output)")
        #expect(s.output.contains("cannot record steady as background in the registry"), "\(s.output)")
        #expect(s.output.contains("No space left on device"), "\(s.output)")
        #expect(s.output.contains(box.stateDir + "/registry"), "\(s.output)")
        #expect(s.output.contains("nothing was done"), "\(s.output)")
        let cgroup = try #require(steady.cgroup)
        #expect(!Kernel.cgroupFrozen(cgroup), "refused, yet frozen")
        #expect(((try? String(contentsOfFile: cgroup + "/cgroup.freeze", encoding: .utf8)) ?? "").hasPrefix("0"))
        #expect(try box.apps()["steady"]?.state == .active)

        let sm = try box.icebox(["suspend", "small"])
        #expect(sm.status == 0, "\(sm.output)")
        #expect(Kernel.cgroupFrozen(try #require(small.cgroup)))
        #expect(try box.apps()["small"]?.state == .suspended)
        let record = try String(contentsOfFile: box.stateDir + "/registry/small.json", encoding: .utf8)
        #expect(JSONLines.decode(AppRecord.self, record)?.state == .suspended, "\(record)")

        let l = try box.icebox(["launch", "--grace", "0", "newcomer", "--", "sleep", "1000"])
        #expect(l.status == 74, "\(l.output)")
        #expect(l.output.contains("cannot record newcomer as launching in the registry"), "\(l.output)")
        #expect(l.output.contains("No space left on device"), "\(l.output)")
        #expect(try box.apps()["newcomer"] == nil)
        #expect(box.cgroupRoot.map { !FileManager.default.fileExists(atPath: $0 + "/newcomer") } ?? true)
        let strays = try box.run("/usr/bin/pgrep", ["-f", "^sleep 1000$"]).stdout.split(separator: "\n").compactMap { pid_t($0) }
        #expect(strays.filter { $0 != steady.pid && $0 != small.pid }.allSatisfy { !box.inSandboxCgroup($0) })

        // Space again: everything works, and the app's record is written.
        try FileManager.default.removeItem(atPath: box.stateDir + "/filler")
        let again = try box.icebox(["suspend", "steady"])
        #expect(again.status == 0, "\(again.output)")
        #expect(Kernel.cgroupFrozen(cgroup))
        // The confirmed record is written at the end of the daemon's turn, after the reply.
        let savedPath = box.stateDir + "/registry/steady.json"
        #expect(
            Scenario.eventually { ((try? String(contentsOfFile: savedPath, encoding: .utf8)) ?? "").contains("\"state\":\"suspended\"") },
            "\((try? String(contentsOfFile: savedPath, encoding: .utf8)) ?? "no record")")

        // Read-only now: a resume goes ahead (a thaw needs no record first: a daemon killed
        // now would find the app running and finish the thaw), and says its record is stale.
        // (A read-only bind mount of the registry alone: the app's log stays open for writing.)
        let registry = box.stateDir + "/registry"
        let bind = try box.run("/bin/mount", ["--bind", registry, registry])
        try #require(bind.status == 0, "cannot bind-mount: \(bind.output)")
        let ro = try box.run("/bin/mount", ["-o", "remount,bind,ro", registry])
        try #require(ro.status == 0, "cannot make the bind mount read-only: \(ro.output)")
        let r = try box.icebox(["resume", "steady"])
        #expect(r.status == 74, "\(r.output)")
        #expect(r.output.contains("cannot record steady as active in the registry"), "\(r.output)")
        #expect(r.output.contains("Read-only file system"), "\(r.output)")
        #expect(r.output.contains("steady is active all the same"), "\(r.output)")
        #expect(!Kernel.cgroupFrozen(cgroup))
        #expect(try box.apps()["steady"]?.state == .active)
        // And a suspend is refused, with nothing done.
        let s2 = try box.icebox(["suspend", "steady"])
        #expect(s2.status == 74, "\(s2.output)")
        #expect(s2.output.contains("Read-only file system"), "\(s2.output)")
        #expect(!Kernel.cgroupFrozen(cgroup), "refused, yet frozen")
        _ = try box.run("/bin/umount", [registry])
        // Writable again: the stale record is written on the daemon's next turn.
        _ = try box.icebox(["ps"])
        let fresh = try String(contentsOfFile: box.stateDir + "/registry/steady.json", encoding: .utf8)
        #expect(fresh.contains("\"state\":\"active\""), "\(fresh)")
    }

    @Test(
        "scripts/faults finds no loss in a quick run (one trial of each fault)",
        .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"))
    func faultsScript() throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/faults").path
        let box = Sandbox()
        defer { box.close() }
        let r = try box.run(script, ["1"], extraEnv: ["ICEBOX_BIN": Sandbox.binary, "FAULTS_DIR": box.dir + "/faults"], timeout: 60)
        #expect(r.status == 0, "\(r.output)")
        #expect(r.stdout.contains("launch"), "\(r.stdout)")
    }
}

extension Sandbox {
    /// Runs a program with the sandbox's environment, reading its output to the end.
    func run(_ program: String, _ args: [String], extraEnv: [String: String] = [:], timeout: Double = 30) throws -> Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: program)
        p.arguments = args
        p.environment = environment.merging(extraEnv) { $1 }
        return try Sandbox.runToEnd(p, timeout: timeout, what: ([program] + args).joined(separator: " "))
    }

    /// Whether a process lives in a cgroup under this sandbox's root.
    func inSandboxCgroup(_ pid: pid_t) -> Bool {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/cgroup", encoding: .utf8)) ?? ""
        // Its name is the same in every hierarchy (the v1 memory root follows it too).
        guard let name = cgroupRoot?.split(separator: "/").last else { return false }
        return text.contains("/\(name)/")
    }
}

import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// Every host layout icebox meets, made for real on this (hybrid) machine in a mount
/// namespace of its own, and the whole lifecycle run in it through the real binary: daemon
/// start, launch, suspend (the verdict read from the kernel), resume, evict, daemon stop,
/// and `icebox doctor` explaining the layout. The processes stay in the host's cgroups
/// (a mount namespace changes what is mounted, not where processes are), so a cgroup2 mount
/// made in the namespace shows the host's hierarchy and cleanup happens on the host's paths.
@Suite(.enabled(if: HostLayoutWorld.unavailableReason == nil, "\(HostLayoutWorld.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct HostLayoutTests {
    @Test("pure cgroup v2: cgroup2 alone at /sys/fs/cgroup")
    func pureV2() throws { try Self.lifecycle(.pureV2) }

    @Test(
        "v1 only: no cgroup2 mount, the v1 freezer and memory hierarchies",
        .enabled(if: Sandbox.mounts.freezerV1 != nil, "this host has no v1 freezer hierarchy to keep"))
    func v1Only() throws { try Self.lifecycle(.v1Only) }

    @Test("no cgroups at all: an empty tmpfs over /sys/fs/cgroup")
    func noCgroups() throws { try Self.lifecycle(.none) }

    @Test(
        "no cgroups, short of descriptors: apps sharing the notify socket are told apart by their session",
        .enabled(if: FileManager.default.fileExists(atPath: "/usr/bin/prlimit"), "prlimit (util-linux) is not installed"))
    func sharedNotifyWithoutCgroups() throws {
        let world = try HostLayoutWorld(.none)
        defer { world.close() }
        // 128 descriptors: never plenty (DescriptorBudget), so every app shares the socket.
        #expect(try world.icebox(["daemon"], descriptorLimit: 128).status == 0)
        for name in ["one", "two"] {
            let r = try world.icebox([
                "launch", "--ready", "notify", "--ready-timeout", "20s", name, "--",
                "sh", "-c", "sleep 0.1; systemd-notify --ready --status=\(name); exec sleep 1000",
            ])
            #expect(r.status == 0, "\(r.output)")
        }
        let apps = try world.apps()
        for name in ["one", "two"] {
            #expect(apps[name]?.statusText == name, "\(name): \(apps[name]?.statusText ?? "no status")")
            let environ = FileManager.default.contents(atPath: "/proc/\(apps[name]?.pid ?? 0)/environ") ?? Data()
            #expect(String(decoding: environ, as: UTF8.self).contains("NOTIFY_SOCKET=\(world.box.runtimeDir)/notify.sock\u{0}"))
        }
        #expect(try world.icebox(["daemon", "--stop", "--terminate-apps"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: world.box.runtimeDir + "/notify.sock"), "the shared socket is left behind")
    }

    @Test("a read-only cgroupfs (every cgroup mount remounted ro, as container runtimes do)")
    func readOnly() throws { try Self.lifecycle(.readOnly) }

    @Test("an unprivileged user with a delegated cgroup2 subtree", .enabled(if: OtherUser.available, "setpriv is missing"))
    func delegated() throws { try Self.lifecycle(.delegated) }

    /// A rootless container: the unprivileged user becomes root in a user namespace of its
    /// own (`unshare --user --map-root-user`), with the subtree delegated to its host uid.
    @Test(
        "root in a user namespace with a cgroup2 subtree delegated to its host uid",
        .enabled(if: OtherUser.available, "setpriv is missing"),
        .enabled(if: OtherUser.userNamespaceRefusal == nil, "\(OtherUser.userNamespaceRefusal ?? "")"))
    func userNamespace() throws { try Self.lifecycle(.userNamespace) }

    /// The first cgroup2 mount read-only, a second one writable (as a runtime may give a
    /// container its own beside the host's): a root asked for on the second is used there.
    @Test("a cgroup root on a second, writable cgroup2 mount while the first is read-only")
    func secondCgroup2Mount() throws {
        let world = try HostLayoutWorld(.secondCgroup2)
        defer { world.close() }
        let doctor = try world.icebox(["doctor", "--color", "never"])
        #expect(doctor.status == 0, "\(doctor.output)")
        #expect(doctor.stdout.contains(world.cgroupRoot + ": writable, freezer present"), "\(doctor.stdout)")
        let launched = try world.icebox(["launch", "--backend", "cgroup2", "--grace", "0", "web", "--", "sleep", "1000"])
        #expect(launched.status == 0, "\(launched.output)")
        let record = try #require(try world.apps()["web"])
        #expect(record.cgroup == world.cgroupRoot + "/web")
        // The same cgroup, as the host has it (the second mount shows the whole hierarchy).
        let host = try #require(world.box.cgroupRoot) + "/web"
        #expect(Set(Sandbox.pids(in: host)) == [record.pid])
        #expect(try world.icebox(["suspend", "web"]).status == 0)
        #expect(Kernel.cgroupFrozen(host), "the host does not see web frozen")
        #expect(try world.icebox(["resume", "web"]).status == 0)
        #expect(!Kernel.cgroupFrozen(host))
        #expect(try world.icebox(["terminate", "web"]).status == 0)
        #expect(!Kernel.alive(record.pid) && !FileManager.default.fileExists(atPath: host))
        #expect(try world.icebox(["daemon", "--stop", "--terminate-apps"]).status == 0)
    }

    // Container layouts (issue 33): what a container runtime gives a process inside it.

    /// `icebox daemon --foreground` as a container's init: PID 1 of a PID namespace of its
    /// own. It serves commands from outside the namespace, freezes and thaws (seen in the
    /// host's cgroup files), reaps the orphans that land on it, and its stop ends the
    /// namespace with nothing left on the host.
    @Test("icebox daemon --foreground as PID 1 of a PID namespace")
    func daemonAsPID1() throws {
        let box = Sandbox("pid1")
        defer { box.close() }
        let initProcess = Process()
        initProcess.executableURL = URL(fileURLWithPath: HostLayoutWorld.unshare)
        initProcess.arguments = [
            "--pid", "--fork", "--mount-proc", "--kill-child=SIGKILL", "--", Sandbox.binary, "daemon", "--foreground",
        ]
        initProcess.environment = box.environment
        try initProcess.run()
        defer {
            if initProcess.isRunning { kill(initProcess.processIdentifier, SIGKILL) }
            initProcess.waitUntilExit()
        }
        // Serving once its socket is there (a command before that would start a daemon of its own).
        #expect(Scenario.eventually(seconds: 10) { FileManager.default.fileExists(atPath: box.runtimeDir + "/icebox.sock") })
        let daemon = try #require(Kernel.children(of: initProcess.processIdentifier).first)
        let lock = try String(contentsOfFile: box.runtimeDir + "/daemon.lock", encoding: .utf8)
        #expect(lock.trimmingCharacters(in: .whitespacesAndNewlines) == "1", "the daemon is not PID 1 of its namespace: \(lock)")
        // doctor does not take pid 1 here (the host's init) for the daemon.
        let doctor = try box.icebox(["doctor", "--color", "never"])
        #expect(!doctor.stdout.contains("pid 1 has"), "\(doctor.stdout)")

        // An app whose shell leaves an orphan that exits: the orphan lands on PID 1, the daemon.
        let launched = try box.icebox([
            "launch", "--grace", "0", "web", "--", "sh", "-c", "(sleep 0.2 &); sleep 1000 & exec sleep 1001",
        ])
        #expect(launched.status == 0, "\(launched.output)")
        let record = try #require(try box.apps()["web"])
        let cgroup = try #require(record.cgroup)
        #expect(Scenario.eventually(seconds: 5) { Sandbox.pids(in: cgroup).count == 2 }, "\(Sandbox.pids(in: cgroup))")
        #expect(
            Scenario.eventually(seconds: 5) { Kernel.children(of: daemon, inState: "Z").isEmpty },
            "zombies left on PID 1: \(Kernel.children(of: daemon, inState: "Z"))")

        #expect(try box.icebox(["suspend", "web"]).status == 0)
        #expect(Kernel.cgroupFrozen(cgroup), "the host does not see web frozen")
        #expect(try box.icebox(["resume", "web"]).status == 0)
        #expect(!Kernel.cgroupFrozen(cgroup))
        let terminated = try box.icebox(["terminate", "web"])
        #expect(terminated.status == 0, "\(terminated.output)")
        #expect(!FileManager.default.fileExists(atPath: cgroup), "\(cgroup) is left behind")

        #expect(try box.icebox(["daemon", "--stop", "--terminate-apps"]).status == 0)
        #expect(Scenario.eventually(seconds: 10) { !initProcess.isRunning }, "PID 1 did not end")
        let root = try #require(box.cgroupRoot)
        #expect(!FileManager.default.fileExists(atPath: root), "\(root) is left behind")
    }

    @Test(
        "a container in the host's cgroup namespace, v1 (runc, Kubernetes on v1 nodes): freezer and memory mounted at the container's cgroup, no cgroup2",
        .enabled(
            if: Sandbox.mounts.freezerV1 != nil && Sandbox.mounts.memoryV1 != nil, "this host has no v1 freezer and memory hierarchies"))
    func hostNamespaceV1() throws { try Self.container(.hostNamespaceV1) }

    @Test("a container in the host's cgroup namespace, v2 (--cgroupns=host): cgroup2 mounted at the container's cgroup")
    func hostNamespaceV2() throws { try Self.container(.hostNamespaceV2) }

    @Test(
        "a container with a private cgroup namespace and only cgroup2 mounted, read-write",
        .enabled(if: FileManager.default.fileExists(atPath: "/proc/self/ns/cgroup"), "this kernel has no cgroup namespaces (Linux 4.6)"))
    func privateNamespace() throws { try Self.container(.privateNamespace) }

    @Test(
        "a container with a private cgroup namespace and only cgroup2 mounted, read-only",
        .enabled(if: FileManager.default.fileExists(atPath: "/proc/self/ns/cgroup"), "this kernel has no cgroup namespaces (Linux 4.6)"))
    func privateNamespaceReadOnly() throws { try Self.container(.privateNamespaceReadOnly) }

    /// The whole lifecycle, then what a container adds: an app ready by sd_notify (its
    /// sender is known by its cgroup, read through the mount's root), and a suspended app
    /// that survives the daemon's death (the next daemon knows it by its cgroup) and is then
    /// terminated. Every verdict is read from the host's own cgroup files.
    static func container(_ layout: HostLayout) throws {
        try lifecycle(layout)
        let world = try HostLayoutWorld(layout)
        defer { world.close() }
        #expect(try world.icebox(["daemon"]).status == 0)
        let app = world.box.pythonApp()
        let launched = try world.icebox(["launch", "--ready", "notify", "--ready-timeout", "15s", "ready", "--", "/usr/bin/python3", app])
        #expect(launched.status == 0, "\(launched.output)")
        let ready = try #require(try world.apps()["ready"])
        #expect(ready.state == .active && ready.statusText == "serving", "\(ready.state) \(ready.statusText ?? "")")
        #expect(try world.icebox(["terminate", "ready"]).status == 0)

        #expect(try world.icebox(["launch", "--grace", "0", "kept", "--", "sleep", "1000"]).status == 0)
        let record = try #require(try world.apps()["kept"])
        #expect(record.backend == layout.backend)
        func frozen() -> Bool {
            switch layout.backend {
            case .cgroup2: return record.cgroup.map { Kernel.cgroupFrozen(world.seen($0)) } ?? false
            case .cgroup1: return record.freezerV1.map { Kernel.freezerState(world.seen($0)) == "FROZEN" } ?? false
            case .signal: return Kernel.processState(record.pid) == "T"
            }
        }
        let suspended = try world.icebox(["suspend", "kept"])
        #expect(suspended.status == 0 && suspended.stdout.contains("frozen in"), "\(suspended.output)")
        #expect(frozen(), "the host does not see kept frozen")

        // The daemon dies; the next one (started by the next command) keeps the app as it is.
        try world.box.killDaemon()
        let after = try #require(try world.apps()["kept"])
        #expect(after.state == .suspended && after.pid == record.pid, "\(after.state) \(after.ending ?? "")")
        #expect(Kernel.alive(record.pid), "the restarted daemon killed the suspended app")
        #expect(frozen(), "the host does not see kept frozen after the restart")
        let adopted = world.events().last { $0.app == "kept" && $0.kind == .adopt }?.detail ?? ""
        #expect(adopted.contains("re-adopted"), "\(adopted)")

        let resumed = try world.icebox(["resume", "kept"])
        #expect(resumed.status == 0 && resumed.stdout.contains("thawed in"), "\(resumed.output)")
        #expect(!frozen())
        let terminated = try world.icebox(["terminate", "kept"])
        #expect(terminated.status == 0, "\(terminated.output)")
        #expect(!Kernel.alive(record.pid), "kept survived its termination")
        for path in [ready.cgroup, ready.freezerV1, ready.memoryV1, record.cgroup, record.freezerV1, record.memoryV1].compactMap({ $0 }) {
            #expect(!FileManager.default.fileExists(atPath: world.seen(path)), "\(path) is left behind")
        }
        #expect(try world.icebox(["daemon", "--stop", "--terminate-apps"]).status == 0)
    }

    static func lifecycle(_ layout: HostLayout) throws {
        let world = try HostLayoutWorld(layout)
        defer { world.close() }
        let expected = layout.backend

        if layout == .delegated { try Self.outsideTheSubtree(world) }

        // doctor explains the layout, and its exit status says icebox can run apps here.
        let doctor = try world.icebox(["doctor", "--color", "never"])
        #expect(doctor.status == 0, "\(doctor.output)")
        for phrase in layout.doctorPhrases { #expect(doctor.stdout.contains(phrase), "doctor lacks '\(phrase)':\n\(doctor.stdout)") }
        let auto = doctor.stdout.split(separator: "\n").first { $0.contains("auto backend") }.map(String.init) ?? ""
        #expect(auto.contains("auto backend") && auto.hasSuffix(" " + layout.autoChoice), "\(auto)")
        let json = try world.icebox(["doctor", "--json"])
        let report = JSONLines.decode(DoctorReport.self, json.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(report?.autoBackend == expected.rawValue && report?.usable == true, "\(json.output)")
        let required = try world.icebox(["doctor", "--require", layout.missingFeature])
        #expect(required.status == 1, "\(required.output)")
        #expect(required.stderr.contains("required but missing: \(layout.missingFeature)"), "\(required.stderr)")

        // The daemon starts and says which backend auto picks here, and why.
        let started = try world.icebox(["daemon"])
        #expect(started.status == 0, "\(started.output)")

        // A backend the layout cannot give is refused with the documented status and why.
        let (refused, status, why) = layout.refusal
        let r = try world.icebox(["launch", "--backend", refused, "--grace", "0", "refused", "--", "sleep", "100"])
        #expect(r.status == status, "\(r.output)")
        #expect(r.stderr.contains("backend \(refused) is unavailable") && r.stderr.contains(why), "\(r.stderr)")

        // Launch a two-process app: ready once the shell has started its background child.
        let pidFile = world.appDir + "/child.pid"
        let launched = try world.icebox([
            "launch", "--grace", "0", "--ready", "cmd:test -s \(pidFile)", "web", "--",
            "sh", "-c", "sleep 1000 & echo $! > \(pidFile); exec sleep 1001",
        ])
        #expect(launched.status == 0, "\(launched.output)")
        #expect(launched.stdout.contains("backend \(expected.rawValue)"), "\(launched.stdout)")
        // The start line is written before the daemon serves its first request: there by now.
        let daemonLine = world.events().last { $0.kind == .daemon && $0.detail.hasPrefix("daemon started") }?.detail ?? ""
        #expect(daemonLine.hasSuffix("auto backend " + layout.autoChoice), "\(daemonLine)")
        let record = try #require(try world.apps()["web"])
        #expect(record.backend == expected)
        let child = try #require(
            pid_t(try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        let pids = [record.pid, child]
        // The app's own cgroups hold both processes (seen through the namespace).
        switch expected {
        case .cgroup2:
            let cgroup = try #require(record.cgroup)
            #expect(Set(Sandbox.pids(in: world.seen(cgroup))) == Set(pids))
        case .cgroup1:
            #expect(record.cgroup == nil)
            let freezer = try #require(record.freezerV1)
            #expect(Set(Sandbox.pids(in: world.seen(freezer))) == Set(pids))
        case .signal:
            #expect(record.cgroup == nil && record.freezerV1 == nil)
        }
        // The app starts as the daemon was started (the test's own settings): the daemon's
        // scheduler slice, and the CPU it pins itself to for the clone, are the daemon's
        // alone (SchedulerLatency, the shim's spawn). Its timer slack is the kernel's.
        let ours = Kernel.scheduling("self")
        #expect(Kernel.scheduling(String(record.pid)) == ours, "app: \(Kernel.scheduling(String(record.pid))); test: \(ours)")
        if let daemon = world.box.daemonPID {
            let theirs = Kernel.scheduling(String(daemon))
            #expect(theirs.timerSlack == ours.timerSlack, "\(theirs)")
            if Kernel.customSlices && ours.slice != nil { #expect(theirs.slice == "1000000", "\(theirs)") }
        }
        // A v1 memory cgroup of its own where the memory controller is v1's and writable.
        #expect(
            (record.memoryV1 != nil) == (layout == .v1Only || layout == .hostNamespaceV1), "\(record.memoryV1 ?? "no v1 memory cgroup")")
        if let memory = record.memoryV1 { #expect(Set(Sandbox.pids(in: world.seen(memory))) == Set(pids)) }

        func frozen() -> Bool {
            switch expected {
            case .cgroup2: return Kernel.cgroupFrozen(world.seen(record.cgroup!))
            case .cgroup1: return Kernel.freezerState(world.seen(record.freezerV1!)) == "FROZEN"
            case .signal: return pids.allSatisfy { Kernel.processState($0) == "T" }
            }
        }
        func running() -> Bool {
            switch expected {
            case .cgroup2: return !Kernel.cgroupFrozen(world.seen(record.cgroup!))
            case .cgroup1: return Kernel.freezerState(world.seen(record.freezerV1!)) == "THAWED"
            case .signal: return pids.allSatisfy { Kernel.alive($0) && Kernel.processState($0) != "T" }
            }
        }
        let suspended = try world.icebox(["suspend", "web"])
        #expect(suspended.status == 0, "\(suspended.output)")
        #expect(suspended.stdout.contains("frozen in") && suspended.stdout.contains("(\(expected.rawValue), "), "\(suspended.stdout)")
        #expect(frozen(), "the kernel does not report web frozen")

        let resumed = try world.icebox(["resume", "web"])
        #expect(resumed.status == 0, "\(resumed.output)")
        #expect(resumed.stdout.contains("thawed in"), "\(resumed.stdout)")
        #expect(running(), "the kernel does not report web running")
        // Whatever the thaw ran at (SCHED_FIFO, PreemptionGuard, when it wakes several tasks),
        // the daemon is back on its own policy and slice.
        if let daemon = world.box.daemonPID {
            let after = Kernel.scheduling(String(daemon))
            #expect(after.policy == ours.policy, "daemon after a thaw: \(after); test: \(ours)")
            if Kernel.customSlices && ours.slice != nil { #expect(after.slice == "1000000", "\(after)") }
        }

        #expect(try world.icebox(["suspend", "web"]).status == 0)
        let evicted = try world.icebox(["evict", "web"])
        #expect(evicted.status == 0, "\(evicted.output)")
        #expect(try world.apps()["web"]?.state == .evicted)
        for pid in pids { #expect(!Kernel.alive(pid), "pid \(pid) survived the eviction") }
        for path in [record.cgroup, record.freezerV1, record.memoryV1].compactMap({ $0 }) {
            #expect(!FileManager.default.fileExists(atPath: world.seen(path)), "\(path) is left behind")
        }

        // A suspended app terminated: thawed so it can act on SIGTERM, then gone with its cgroups.
        #expect(try world.icebox(["launch", "--grace", "0", "calm", "--", "sleep", "1000"]).status == 0)
        let calm = try #require(try world.apps()["calm"])
        #expect(try world.icebox(["suspend", "calm"]).status == 0)
        let terminated = try world.icebox(["terminate", "calm"])
        #expect(terminated.status == 0 && terminated.stdout.contains("terminated"), "\(terminated.output)")
        #expect(!Kernel.alive(calm.pid), "calm survived its termination")
        for path in [calm.cgroup, calm.freezerV1, calm.memoryV1].compactMap({ $0 }) {
            #expect(!FileManager.default.fileExists(atPath: world.seen(path)), "\(path) is left behind")
        }

        // The daemon stops, and the roots it made for this test go with it.
        let stopped = try world.icebox(["daemon", "--stop", "--terminate-apps"])
        #expect(stopped.status == 0, "\(stopped.output)")
        for root in world.roots { #expect(!FileManager.default.fileExists(atPath: world.seen(root)), "\(root) is left behind") }
    }

    /// From outside the subtree (a shell left where it was), the user may make cgroups in it
    /// but not move a process into them: the common ancestor's cgroup.procs is root's.
    static func outsideTheSubtree(_ world: HostLayoutWorld) throws {
        let containment = "their common ancestor"
        let doctor = try world.icebox(["doctor", "--color", "never"], inLeader: false)
        #expect(doctor.stdout.contains(containment), "\(doctor.stdout)")
        #expect(doctor.stdout.contains("a delegated subtree, but this process's cgroup is outside it"), "\(doctor.stdout)")
        // The root was asked for (ICEBOX_CGROUP_ROOT): auto does not fall back to signal.
        let json = try world.icebox(["doctor", "--json"], inLeader: false)
        let report = JSONLines.decode(DoctorReport.self, json.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(report?.autoBackend == "none" && report?.usable == false, "\(json.output)")
        let r = try world.icebox(["launch", "--backend", "cgroup2", "--grace", "0", "outside", "--", "sleep", "100"], inLeader: false)
        #expect(r.status == 77, "\(r.output)")
        #expect(r.stderr.contains("backend cgroup2 is unavailable") && r.stderr.contains(containment), "\(r.stderr)")
        let auto = try world.icebox(["launch", "--grace", "0", "outside", "--", "sleep", "100"], inLeader: false)
        #expect(auto.status == 77, "\(auto.output)")
        #expect(
            auto.stderr.contains("the cgroup root \(world.cgroupRoot) cannot be used") && auto.stderr.contains(containment),
            "\(auto.stderr)")
        #expect(try world.icebox(["daemon", "--stop"], inLeader: false).status == 0)
    }

    /// What `icebox doctor --json` says, the parts these tests read.
    struct DoctorReport: Decodable {
        var autoBackend: String
        var usable: Bool
    }
}

/// A host layout made in a mount namespace, and what icebox should make of it.
enum HostLayout {
    case pureV2, v1Only, none, readOnly, delegated
    /// `.delegated`, the user being root in a user namespace of its own.
    case userNamespace
    /// Containers: the host's cgroup namespace with mounts whose root (mountinfo field 4) is
    /// the container's cgroup, not `/`; a private cgroup namespace with cgroup2 alone.
    case hostNamespaceV1, hostNamespaceV2, privateNamespace, privateNamespaceReadOnly
    /// The host's cgroup2 mount read-only, the same hierarchy mounted again, writable, at a
    /// scratch directory.
    case secondCgroup2

    var backend: BackendKind {
        switch self {
        case .pureV2, .delegated, .userNamespace, .hostNamespaceV2, .privateNamespace, .secondCgroup2: .cgroup2
        case .v1Only, .hostNamespaceV1: .cgroup1
        case .none, .readOnly, .privateNamespaceReadOnly: .signal
        }
    }

    /// A container layout: its processes are moved, from the host, into the container's
    /// cgroups before they enter the namespace (as a runtime does).
    var isContainer: Bool {
        switch self {
        case .hostNamespaceV1, .hostNamespaceV2, .privateNamespace, .privateNamespaceReadOnly: true
        default: false
        }
    }

    /// Whether the holder has a cgroup namespace of its own (commands enter it too).
    var privateCgroupNamespace: Bool { self == .privateNamespace || self == .privateNamespaceReadOnly }

    /// The shell commands, run as root in the new namespace, that make the layout.
    /// `container`: the host directories of the container's cgroups (`containerCgroups`).
    func setup(container: [String], scratch: String) -> String {
        switch self {
        case .secondCgroup2:
            "mount -o remount,bind,ro \(Sandbox.mounts.unified!) && mount -t cgroup2 cgroup2 \(scratch)"
        case .hostNamespaceV1:
            // Each v1 hierarchy shows the container's cgroup at its mount point (runc's
            // layout); no cgroup2 (hidden, as on a v1-only node).
            "mount --bind \(container[0]) \(Sandbox.mounts.freezerV1!) && mount --bind \(container[1]) \(Sandbox.mounts.memoryV1!)"
                + " && mount -t tmpfs -o mode=755,size=16k icebox-hide \(Sandbox.mounts.unified!)"
        case .hostNamespaceV2:
            // The container's v2 cgroup over the whole of /sys/fs/cgroup (Docker's --cgroupns=host).
            "mount --bind \(container[0]) /sys/fs/cgroup"
        case .privateNamespace, .privateNamespaceReadOnly:
            // The cgroup namespace's root is the container's cgroup (the holder was moved there
            // before unshare); the holder then leaves it for the leader leaf.
            "umount -l /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup && echo $$ > /sys/fs/cgroup/leader/cgroup.procs"
                + (self == .privateNamespaceReadOnly ? " && mount -o remount,bind,ro /sys/fs/cgroup" : "")
        case .pureV2, .delegated, .userNamespace, .v1Only, .none, .readOnly:
            // The five host layouts: scripts/lib/host-layout.sh makes them, for these tests
            // and for scripts/test-layouts (the whole suite in each), from one source.
            ". '\(Self.layoutScript)' && icebox_host_layout \(scriptName!) '\(Sandbox.mounts.unified!)'"
        }
    }

    /// The shell functions that make the host layouts (sourced by the namespace's shell).
    static let layoutScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/lib/host-layout.sh").path

    /// The layout's name for scripts/lib/host-layout.sh and scripts/test-layouts (nil: a
    /// container or a second mount, which only these tests make).
    var scriptName: String? {
        switch self {
        case .pureV2, .userNamespace: "pure-v2"
        case .delegated: "delegated"
        case .v1Only: "v1-only"
        case .none: "none"
        case .readOnly: "read-only"
        case .hostNamespaceV1, .hostNamespaceV2, .privateNamespace, .privateNamespaceReadOnly, .secondCgroup2: nil
        }
    }

    /// What doctor must say about the layout.
    var doctorPhrases: [String] {
        switch self {
        case .pureV2: ["pure cgroup v2", "no cgroup v1 freezer hierarchy is mounted"]
        case .v1Only: ["legacy (cgroup v1 only)", "no cgroup2 filesystem is mounted", "usable (--backend cgroup1)"]
        case .none: ["no cgroup filesystems mounted", "no cgroup2 filesystem is mounted", "no cgroup v1 freezer hierarchy is mounted"]
        case .readOnly:
            [Sandbox.mounts.mode, "is mounted read-only", "sum of Pss from smaps_rollup", "not used (apps get no v2 cgroup here)"]
        case .delegated: ["pure cgroup v2", "the cgroup root is writable by uid \(OtherUser.uid)"]
        case .userNamespace:
            [
                "pure cgroup v2",
                "root inside a user namespace (uid_map 0 \(OtherUser.uid) 1: host uid \(OtherUser.uid)), not the host's root: "
                    + "the cgroup root is writable here",
            ]
        case .hostNamespaceV1:
            // The daemon's own memory cgroup is the mount point: the apps' go under it.
            ["legacy (cgroup v1 only)", "usable (--backend cgroup1)", "a v1 memory cgroup per app under \(Sandbox.mounts.memoryV1!)/apps"]
        case .hostNamespaceV2, .privateNamespace:
            // doctor's own cgroup found through the mount's root: its test spawn goes there.
            ["pure cgroup v2", "clone3(CLONE_INTO_CGROUP | CLONE_PIDFD) works (tried into /sys/fs/cgroup/leader)"]
        case .privateNamespaceReadOnly: ["pure cgroup v2", "is mounted read-only"]
        case .secondCgroup2: ["writable, freezer present"]
        }
    }

    /// The end of doctor's "auto backend" line (and of the daemon's start line): the pick,
    /// and for a fallback, why the better backends are out.
    var autoChoice: String {
        let none = "no cgroup2 filesystem is mounted (see /proc/self/mountinfo)"
        let readOnly = "is mounted read-only"
        let noFreezer = "no cgroup v1 freezer hierarchy is mounted"
        return switch self {
        case .pureV2, .delegated, .userNamespace, .hostNamespaceV2, .privateNamespace, .secondCgroup2: "cgroup2"
        case .v1Only, .hostNamespaceV1: "cgroup1 (cgroup2: \(none))"
        case .privateNamespaceReadOnly: "signal (cgroup2: the cgroup filesystem at /sys/fs/cgroup \(readOnly); cgroup1: \(noFreezer))"
        case .none: "signal (cgroup2: \(none); cgroup1: \(noFreezer))"
        case .readOnly:
            "signal (cgroup2: the cgroup filesystem at \(Sandbox.mounts.unified!) \(readOnly); cgroup1: "
                + (Sandbox.mounts.freezerV1.map { "the cgroup filesystem at \($0) \(readOnly))" } ?? "\(noFreezer))")
        }
    }

    /// A feature doctor --require must find missing here.
    var missingFeature: String {
        switch self {
        case .pureV2, .delegated, .userNamespace, .hostNamespaceV2, .privateNamespace, .secondCgroup2: "cgroup1"
        case .v1Only, .readOnly, .hostNamespaceV1, .privateNamespaceReadOnly: "cgroup2"
        case .none: "cgroup1"
        }
    }

    /// A backend asked for by name that the layout cannot give: the exit status and the why.
    var refusal: (backend: String, status: Int32, why: String) {
        switch self {
        case .pureV2, .delegated, .userNamespace, .hostNamespaceV2, .privateNamespace, .secondCgroup2:
            ("cgroup1", 69, "no cgroup v1 freezer hierarchy is mounted")
        case .v1Only, .hostNamespaceV1: ("cgroup2", 69, "no cgroup2 filesystem is mounted")
        case .privateNamespaceReadOnly: ("cgroup2", 69, "is mounted read-only")
        case .none: ("cgroup1", 69, "no cgroup v1 freezer hierarchy is mounted")
        case .readOnly: ("cgroup2", 69, "is mounted read-only")
        }
    }
}

/// One layout's world: a Sandbox (directories, a unique cgroup name, cleanup), a process
/// holding a fresh mount namespace with the layout made in it, and every icebox command run
/// inside that namespace with nsenter (as the unprivileged user, for `.delegated`).
final class HostLayoutWorld: @unchecked Sendable {  // used by one test at a time, like Sandbox
    static let unshare = "/usr/bin/unshare"
    static let nsenter = "/usr/bin/nsenter"

    static var unavailableReason: String? {
        // The layouts are made from a hybrid host's cgroup2 mount, and the tests' roots under it.
        if let reason = Sandbox.cgroup2Missing { return reason }
        for tool in [unshare, nsenter] where !FileManager.default.isExecutableFile(atPath: tool) {
            return "\(tool) is missing (util-linux)"
        }
        guard let unified = Sandbox.mounts.unified, unified.hasPrefix("/sys/fs/cgroup") else {
            return "the host's cgroup2 mount is not under /sys/fs/cgroup"
        }
        return nil
    }

    let layout: HostLayout
    let box: Sandbox
    let other: OtherUser?
    let holder = Process()
    private let holderInput = Pipe()
    /// The host's path of the delegated subtree (`.delegated`), which the test makes and removes.
    let delegatedHost: String?
    /// Where the app writes (the unprivileged user's home for `.delegated`).
    let appDir: String
    let environment: [String: String]
    /// ICEBOX_CGROUP_ROOT as seen in the namespace, and the roots the daemon makes there.
    let cgroupRoot: String
    var roots: [String] {
        switch layout {
        case .pureV2, .delegated, .userNamespace, .hostNamespaceV2, .privateNamespace, .secondCgroup2: [cgroupRoot]
        case .v1Only, .hostNamespaceV1: [cgroupRoot]
        case .none, .readOnly, .privateNamespaceReadOnly: []
        }
    }
    /// A container layout's own cgroups, as the host has them: made before the namespace,
    /// removed (with whatever is left in them) after it. Shown in the namespace at
    /// `containerMountPoints` (v1: freezer, memory; v2: the one cgroup2 mount).
    let containerCgroups: [String]
    var containerMountPoints: [String] {
        layout == .hostNamespaceV1 ? [Sandbox.mounts.freezerV1!, Sandbox.mounts.memoryV1!] : ["/sys/fs/cgroup"]
    }
    /// The cgroup.procs files (host paths) each command is written into before it enters.
    var containerProcs: [String] {
        layout == .hostNamespaceV1 ? containerCgroups.map { $0 + "/cgroup.procs" } : [containerCgroups[0] + "/leader/cgroup.procs"]
    }

    init(_ layout: HostLayout) throws {
        self.layout = layout
        let box = Sandbox("layout\(layout)")
        self.box = box
        // The suite runs only where the sandbox's root is under cgroup2 (`unavailableReason`).
        let hostRoot = try #require(box.cgroupRoot)
        let unique = URL(fileURLWithPath: hostRoot).lastPathComponent
        switch layout {
        case .pureV2: cgroupRoot = "/sys/fs/cgroup/" + unique
        case .v1Only: cgroupRoot = box.freezerRoot!
        case .none, .readOnly: cgroupRoot = hostRoot
        case .delegated, .userNamespace: cgroupRoot = "/sys/fs/cgroup/\(unique)/apps"
        case .hostNamespaceV1: cgroupRoot = Sandbox.mounts.freezerV1! + "/apps"
        case .hostNamespaceV2, .privateNamespace: cgroupRoot = "/sys/fs/cgroup/apps"
        case .privateNamespaceReadOnly: cgroupRoot = "/sys/fs/cgroup/icebox"  // the default: nothing is asked for
        case .secondCgroup2: cgroupRoot = box.dir + "/cg2/" + unique
        }
        switch layout {
        case .hostNamespaceV1: containerCgroups = [Sandbox.mounts.freezerV1!, Sandbox.mounts.memoryV1!].map { $0 + "/" + unique }
        case .hostNamespaceV2, .privateNamespace, .privateNamespaceReadOnly: containerCgroups = [Sandbox.mounts.unified! + "/" + unique]
        default: containerCgroups = []
        }
        if layout == .delegated || layout == .userNamespace {
            let other: OtherUser
            do { other = try OtherUser() } catch {
                box.close()
                throw error
            }
            self.other = other
            appDir = other.home
            environment = [
                "PATH": "/usr/bin:/bin", "HOME": other.home, "ICEBOX_CGROUP_ROOT": cgroupRoot,
                "ICEBOX_RUNTIME_DIR": other.home + "/run", "ICEBOX_STATE_DIR": other.home + "/state",
            ]
            delegatedHost = hostRoot
        } else {
            other = nil
            appDir = box.dir
            var env = box.environment.merging(["ICEBOX_CGROUP_ROOT": cgroupRoot]) { $1 }
            // Where no cgroup root can be used, none is asked for: an explicit root that
            // cannot be used is an error, not a fall back to signal.
            if [.none, .readOnly, .privateNamespaceReadOnly].contains(layout) { env.removeValue(forKey: "ICEBOX_CGROUP_ROOT") }
            environment = env
            delegatedHost = nil
        }

        // The shell's complaints go to a file: a pipe could block the read if it never ran.
        let complaints = box.dir + "/layout.err"
        do {
            if let delegatedHost { try Self.delegate(delegatedHost, to: OtherUser.uid) }
            for dir in containerCgroups {
                guard mkdir(dir, 0o755) == 0 else { throw LayoutError(message: "mkdir \(dir): \(String(cString: strerror(errno)))") }
            }
            if layout.isContainer && layout != .hostNamespaceV1 {
                let leader = containerCgroups[0] + "/leader"
                guard mkdir(leader, 0o755) == 0 else { throw LayoutError(message: "mkdir \(leader): \(String(cString: strerror(errno)))") }
            }
            if layout == .secondCgroup2 { try FileIO.makeDirectories(box.dir + "/cg2") }
            let inner =
                "exec 2>\"$0\"; " + layout.setup(container: containerCgroups, scratch: box.dir + "/cg2") + " && echo ready && exec cat"
            if layout.privateCgroupNamespace {
                // Into the container's cgroup first: unshare makes the cgroup it is in the
                // namespace's root.
                holder.executableURL = URL(fileURLWithPath: "/bin/sh")
                holder.arguments = [
                    "-c", #"echo $$ > "$1" && exec "$0" --cgroup --mount --propagation private -- /bin/sh -c "$2" "$3""#,
                    Self.unshare, containerCgroups[0] + "/cgroup.procs", inner, complaints,
                ]
            } else {
                holder.executableURL = URL(fileURLWithPath: Self.unshare)
                holder.arguments = ["--mount", "--propagation", "private", "--", "/bin/sh", "-c", inner, complaints]
            }
            let output = Pipe()
            holder.standardInput = holderInput
            holder.standardOutput = output
            try holder.run()
            // The layout is made once the shell says so; until then nothing may enter.
            let said = Self.readLine(output.fileHandleForReading.fileDescriptor, seconds: 10)
            guard said == "ready" else { throw LayoutError(message: said ?? "the shell ended, or did not say ready within 10s:") }
        } catch {
            let why = (try? String(contentsOfFile: complaints, encoding: .utf8)) ?? ""
            close()
            throw LayoutError(message: "making the \(layout) layout failed: \(error) \(why)")
        }
    }

    struct LayoutError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    /// A cgroup2 directory delegated to `uid` as cgroup-v2.rst describes: the directory and
    /// its cgroup.procs, cgroup.subtree_control and cgroup.threads are the user's, and the
    /// user's processes start in a leaf below it ("leader"), so that the common ancestor of
    /// any move the user makes is the delegated directory itself.
    static func delegate(_ dir: String, to uid: uid_t) throws {
        for path in [dir, dir + "/leader"] {
            guard mkdir(path, 0o755) == 0 else { throw LayoutError(message: "mkdir \(path): \(String(cString: strerror(errno)))") }
        }
        for path in [dir, dir + "/cgroup.procs", dir + "/cgroup.subtree_control", dir + "/cgroup.threads"] {
            guard chown(path, uid, uid) == 0 else { throw LayoutError(message: "chown \(path): \(String(cString: strerror(errno)))") }
        }
    }

    /// A path in the namespace, as the host reaches it: for a container, the host's own path
    /// of the container's cgroups; else through the holder's root.
    func seen(_ path: String) -> String {
        for (point, host) in zip(containerMountPoints, containerCgroups) where path == point || path.hasPrefix(point + "/") {
            return host + path.dropFirst(point.count)
        }
        return "/proc/\(holder.processIdentifier)/root" + path
    }

    /// Runs icebox in the namespace; for `.delegated` as the other user, started in the
    /// delegated subtree's leader cgroup (root moves the shell there before it drops to the
    /// user), or, `inLeader` false, where the test runner is.
    @discardableResult
    /// `descriptorLimit`: run under prlimit with that soft and hard limit on open descriptors
    /// (a daemon this starts keeps it).
    func icebox(_ args: [String], inLeader: Bool = true, descriptorLimit: Int? = nil, timeout: Double = 30) throws -> Sandbox.Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.nsenter)
        var argv = ["--target", "\(holder.processIdentifier)", "--mount", "--"]
        if layout.isContainer {
            // As a runtime starts a process in a container: its cgroups first (from the host),
            // then the namespaces.
            p.executableURL = URL(fileURLWithPath: "/bin/sh")
            let moves = containerProcs.map { "echo $$ > \($0)" }.joined(separator: " && ")
            argv = ["-c", moves + #" && exec "$@""#, "sh", Self.nsenter, "--target", "\(holder.processIdentifier)", "--mount"]
            argv += (layout.privateCgroupNamespace ? ["--cgroup"] : []) + ["--", Sandbox.binary]
        } else if let other {
            let unique = URL(fileURLWithPath: cgroupRoot).deletingLastPathComponent().lastPathComponent
            let leader = inLeader ? "/sys/fs/cgroup/\(unique)/leader/cgroup.procs" : "/dev/null"
            argv += [
                "/bin/sh", "-c", #"echo $$ > "$0" && exec "$@""#, leader,
                OtherUser.setpriv, "--reuid=\(OtherUser.uid)", "--regid=\(OtherUser.uid)", "--clear-groups",
            ]
            // Root in a user namespace of its own, mapped to the user's uid.
            if layout == .userNamespace { argv += [Self.unshare, "--user", "--map-root-user", "--"] }
            argv.append(other.binary)
        } else {
            if let descriptorLimit { argv += ["/usr/bin/prlimit", "--nofile=\(descriptorLimit):\(descriptorLimit)"] }
            argv.append(Sandbox.binary)
        }
        p.arguments = argv + args
        p.environment = environment
        return try Sandbox.runToEnd(p, timeout: timeout, what: "icebox \(args.joined(separator: " ")) in the \(layout) layout")
    }

    func apps() throws -> [String: AppRecord] {
        let r = try icebox(["ps", "--json", "--all"])
        let list = JSONLines.decode([AppRecord].self, r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? []
        return Dictionary(list.map { ($0.name, $0) }, uniquingKeysWith: { $1 })
    }

    func events() -> [Event] {
        let file = (environment["ICEBOX_STATE_DIR"] ?? box.stateDir) + "/events.jsonl"
        let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { JSONLines.decode(Event.self, String($0)) }
    }

    /// Stops the daemon (its apps terminated) while the namespace still exists, ends the
    /// holder (the namespace goes with its last process), then removes what was made on the
    /// host: the delegated subtree, the sandbox's cgroups and directories, the user's copy.
    func close() {
        if holder.isRunning {
            _ = try? icebox(["daemon", "--stop", "--terminate-apps"], timeout: 20)
            try? holderInput.fileHandleForWriting.close()
            kill(holder.processIdentifier, SIGKILL)
            holder.waitUntilExit()
        }
        for dir in containerCgroups { Self.removeTree(dir) }
        if let delegatedHost, FileManager.default.fileExists(atPath: delegatedHost) {
            let tree = Cgroup2(path: delegatedHost)
            try? tree.kill()
            _ = try? tree.waitForEvents(until: Clock.monotonicNanos() + 5_000_000_000) { !$0.populated }
            _ = CgroupTree.remove(delegatedHost)
        }
        box.close()
        other?.close()
    }

    /// Kills whatever is left in a cgroup tree (v2 or v1, thawed first) and removes it
    /// bottom-up, waiting (bounded) for each directory to empty.
    static func removeTree(_ root: String) {
        guard FileManager.default.fileExists(atPath: root) else { return }
        let dirs =
            ((FileManager.default.subpaths(atPath: root) ?? []).map { root + "/" + $0 }.filter {
                FileManager.default.fileExists(atPath: $0 + "/cgroup.procs")
            } + [root]).sorted { $0.count > $1.count }
        for dir in dirs {
            _ = try? FileIO.write(dir + "/freezer.state", "THAWED")
            _ = try? FileIO.write(dir + "/cgroup.freeze", "0")
            for pid in Sandbox.pids(in: dir) { kill(pid, SIGKILL) }
        }
        for dir in dirs {
            for _ in 0..<300 where rmdir(dir) != 0 && errno == EBUSY { usleep(10_000) }
        }
    }

    /// One line from `fd` (without its newline), or nil at end of file or after `seconds`.
    static func readLine(_ fd: Int32, seconds: Double) -> String? {
        let deadline = Clock.monotonicNanos() + UInt64(seconds * 1e9)
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while !bytes.contains(10) {
            let now = Clock.monotonicNanos()
            guard now < deadline, (try? Poll.wait(fd, events: Int16(POLLIN), until: deadline)) ?? 0 != 0,
                read(fd, &byte, 1) == 1
            else { return nil }
            bytes.append(byte)
        }
        return String(decoding: bytes.dropLast(), as: UTF8.self)
    }
}

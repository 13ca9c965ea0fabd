import Glibc
import IceboxCore
import IceboxSystem

/// icebox doctor: what works on this host and why, each finding checked for real.
enum DoctorCommand: IceboxCommand {
    static let spec = CommandSpec(
        name: "doctor", usage: "icebox doctor [--json] [--cgroup-root PATH]",
        summary: "what works on this host and why: cgroups, freezers, pidfd, clone3, PSI, capabilities",
        options: [
            OptionSpec(name: "json", value: nil, help: "the findings as one JSON object"),
            OptionSpec(name: "cgroup-root", value: "PATH", help: "check this cgroup root (or ICEBOX_CGROUP_ROOT)"),
        ])

    struct Finding: Codable {
        var check: String
        var ok: Bool
        var detail: String
    }

    struct Report: Codable {
        var findings: [Finding]
        var autoBackend: String
        var cgroupRoot: String?
    }

    /// Capabilities worth knowing about, and what lacking each one disables.
    static let capabilities: [(String, String)] = [
        ("cap_sys_admin", "creating cgroups outside a delegated subtree"),
        ("cap_dac_override", "writing cgroup files owned by another user"),
        ("cap_kill", "freeze --pid on other users' processes"),
        ("cap_sys_resource", "PSI triggers with windows that are not multiples of 2 s"),
        ("cap_sys_ptrace", "reading other users' /proc details and process_madvise compaction"),
    ]

    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        let env = ProcessEnvironment.dictionary
        let override = args.value("cgroup-root") ?? env["ICEBOX_CGROUP_ROOT"].flatMap { $0.isEmpty ? nil : $0 }
        let facts = HostFacts.discover(cgroupRootOverride: override)
        var f: [Finding] = []
        let m = facts.mounts
        f.append(Finding(check: "cgroup mode", ok: m.unified != nil, detail: m.mode))
        f.append(Finding(check: "cgroup2 mount", ok: m.unified != nil, detail: m.unified ?? "not mounted"))
        f.append(
            Finding(
                check: "cgroup root", ok: facts.cgroup2Usable,
                detail: (facts.cgroupRoot ?? "none") + (facts.cgroupRootProblem.map { ": \($0)" } ?? ": writable, freezer present")))
        f.append(
            Finding(
                check: "delegation", ok: getuid() == 0 || facts.cgroup2Usable,
                detail: getuid() == 0
                    ? "running as root: no delegation needed"
                    : facts.cgroup2Usable
                        ? "the cgroup root is writable by uid \(getuid())"
                        : "not root and no delegated subtree: set ICEBOX_CGROUP_ROOT to a subtree you own"))
        f.append(
            Finding(
                check: "cgroup.kill", ok: facts.supportsCgroupKill,
                detail: facts.supportsCgroupKill
                    ? "present (Linux 5.14+): evict kills a whole app at once" : "absent: evict sends SIGKILL to each process"))
        f.append(
            Finding(
                check: "v1 freezer", ok: facts.cgroup1Usable,
                detail: (facts.freezerV1Root ?? "none") + (facts.freezerV1Problem.map { ": \($0)" } ?? ": usable (--backend cgroup1)")))
        f.append(Finding(check: "v1 memory", ok: m.memoryV1 != nil, detail: m.memoryV1 ?? "not mounted"))
        f.append(
            Finding(
                check: "pidfd", ok: HostFacts.pidfdWorks,
                detail: HostFacts.pidfdWorks ? "pidfd_open works (Linux 5.3+)" : "pidfd_open failed: icebox needs Linux 5.3"))
        f.append(spawnCheck(facts))
        let psi = FileIO.exists("/proc/pressure/memory")
        let sysResource = Capabilities.hasEffective("cap_sys_resource") ?? false
        f.append(
            Finding(
                check: "PSI", ok: psi,
                detail: psi
                    ? "/proc/pressure/memory present; minimum trigger window \(sysResource ? "500ms (CAP_SYS_RESOURCE)" : "2s, in multiples of 2s (no CAP_SYS_RESOURCE)")"
                    : "no /proc/pressure (kernel without CONFIG_PSI, or psi=0)"))
        let capText = Capabilities.effectiveText() ?? "unreadable"
        f.append(Finding(check: "capabilities", ok: true, detail: capText))
        for (cap, disables) in capabilities {
            let has = Capabilities.hasEffective(cap) ?? false
            f.append(Finding(check: cap, ok: has, detail: has ? "present" : "missing: disables \(disables)"))
        }
        let paths = IceboxPaths.fromEnvironment(env)
        let policy = EvictionPolicy.load(from: paths.policyFile)
        for line in policy.lines {
            let key = String(line.prefix(19)).trimmingTrailingSpaces()
            f.append(Finding(check: "policy: " + key, ok: true, detail: String(line.dropFirst(19))))
        }
        f.append(
            Finding(
                check: "memory accounting", ok: true,
                detail: facts.cgroupRoot.map { FileIO.exists($0 + "/memory.current") } == true
                    ? "memory.current (v2 memory controller)"
                    : facts.memoryV1Root.map { "a v1 memory cgroup per app under \($0)" } ?? "sum of Pss from smaps_rollup"))
        let auto = (try? facts.resolve(.auto))?.rawValue ?? "none"
        f.append(Finding(check: "auto backend", ok: true, detail: auto))
        let report = Report(findings: f, autoBackend: auto, cgroupRoot: facts.cgroupRoot)
        if args.flag("json") {
            Output.out(JSONLines.encode(report))
        } else {
            for line in Output.table(f.map { [$0.ok ? "ok" : "--", $0.check, $0.detail] }) { Output.out(line) }
        }
        return 0
    }

    /// Spawns /bin/true straight into a scratch cgroup to see which spawn path works here.
    static func spawnCheck(_ facts: HostFacts) -> Finding {
        guard facts.cgroup2Usable, let root = facts.cgroupRoot else {
            return Finding(check: "clone3", ok: false, detail: "not checked: no usable cgroup root")
        }
        let cg = Cgroup2(path: root + "/.doctor-\(getpid())")
        defer { try? cg.remove() }
        do {
            try cg.create()
            var req = SpawnRequest(executable: "/bin/true", arguments: ["true"], environment: [])
            req.cgroupDirFD = try cg.openDirectory()
            req.cgroupProcsFD = try cg.openProcsForWriting()
            defer { close(req.cgroupDirFD); close(req.cgroupProcsFD) }
            let spawned = try Spawner.spawn(req)
            _ = try? spawned.handle.wait(until: Clock.monotonicNanos() + 5_000_000_000)
            let ok = spawned.method == .clone3IntoCgroup
            return Finding(
                check: "clone3", ok: ok,
                detail: ok
                    ? "clone3(CLONE_INTO_CGROUP | CLONE_PIDFD) works"
                    : "falling back to \(spawned.method.rawValue)")
        } catch {
            return Finding(check: "clone3", ok: false, detail: "test spawn failed: \(error)")
        }
    }
}

import Glibc
import IceboxCore
import IceboxSystem

/// icebox doctor: what works on this host and why, each finding checked for real and nothing
/// changed: a missing cgroup root is judged by the directory it would be made in, and the test
/// spawn goes into doctor's own cgroup. It writes only the cached CRIU verdict (CriuProbeCache).
enum DoctorCommand: IceboxCommand {
    static let name = "doctor"
    static let spec = CommandSpec(
        name: name, usage: "icebox doctor [-j] [--require FEATURE,...] [--cgroup-root PATH]",
        summary: "what works on this host and why: cgroups, freezers, pidfd, clone3, PSI, capabilities, CRIU",
        options: [
            OptionSpec(name: "json", value: nil, help: "the findings as one JSON object", short: "j"),
            OptionSpec(
                name: "require", value: "FEATURE,...",
                help: "exit 1 unless these work: \(Feature.allCases.map(\.rawValue).joined(separator: ", "))",
                repeatable: true),
            OptionSpec(name: "cgroup-root", value: "PATH", help: "check this cgroup root (or ICEBOX_CGROUP_ROOT)"),
        ],
        details: """
            Exits 0 when icebox can run apps here (pidfd works and a freeze backend is usable)
            and every --require'd feature works, 1 otherwise. Changes nothing on the host but
            the cached CRIU verdict (criu-probe.json in an existing state directory): criu is found
            through ICEBOX_CRIU, /usr/local/libexec/icebox/criu, then PATH, and probed with
            `criu check` and a canary dumped and restored, once per kernel and criu binary.
            """,
        operands: .nothing)

    enum Feature: String, CaseIterable, Codable {  // what --require can ask for
        case cgroup2  // the cgroup v2 freezer backend (cgroup.freeze, a usable cgroup root)
        case cgroup1  // the v1 freezer backend
        case signal  // the SIGSTOP backend (/proc readable)
        case psi  // /proc/pressure/memory, for --pressure
        case pidfd  // pidfd_open (Linux 5.3), which the daemon needs
        case clone3  // clone3 with CLONE_INTO_CGROUP (Linux 5.7)
        case cgroupKill = "cgroup-kill"  // cgroup.kill (Linux 5.14)
        case criu  // a criu >= 4.1 that passes `criu check` and dumps and restores a canary
    }

    struct Finding: Codable {
        var check: String
        var ok: Bool
        var detail: String
    }

    struct Report: Codable {
        var findings: [Finding]
        var autoBackend: String
        var cgroupRoot: String?
        var features: [String: Bool]
        var required: [String]
        var missing: [String]
        var usable: Bool  // icebox can run apps here
        var ok: Bool  // usable, and nothing required is missing: exit 0
    }

    /// From "cgroup2,psi" given once or more.
    static func requiredFeatures(_ values: [String]) throws(IceboxError) -> [Feature] {
        var out: [Feature] = []
        for text in values.flatMap({ $0.split(separator: ",").map { String($0).trimmed() } }) where !text.isEmpty {
            let name = try ArgumentParser.choice(text, option: "require", among: Feature.allCases.map(\.rawValue))
            if let f = Feature(rawValue: name), !out.contains(f) { out.append(f) }
        }
        return out
    }

    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        let required = try requiredFeatures(args.all("require"))
        let env = ProcessEnvironment.dictionary
        let override = args.value("cgroup-root") ?? env["ICEBOX_CGROUP_ROOT"].flatMap { $0.isEmpty ? nil : $0 }
        let facts = HostFacts.discover(cgroupRootOverride: override, createRoots: false)
        var f: [Finding] = []
        func add(_ check: String, _ ok: Bool, _ detail: String) { f.append(Finding(check: check, ok: ok, detail: detail)) }
        let m = facts.mounts
        add("cgroup mode", m.unified != nil, m.mode)
        add("cgroup2 mount", m.unified != nil, m.unified ?? "not mounted")
        let toBeMade = facts.cgroupRootExists ? "" : " (does not exist yet: created at the first launch)"
        add(
            "cgroup root", facts.cgroup2Usable,
            (facts.cgroupRoot ?? "none") + (facts.cgroupRootProblem.map { ": \($0)" } ?? ": writable, freezer present" + toBeMade))
        f.append(delegationFinding(facts))
        // The kernel may have it, but only an app with a v2 cgroup (cgroup2 usable) can use it.
        let cgroupKill = facts.supportsCgroupKill && facts.cgroup2Usable
        add(
            "cgroup.kill", cgroupKill,
            cgroupKill
                ? "present (Linux 5.14+): evict kills a whole app at once"
                : facts.supportsCgroupKill
                    ? "not used (apps get no v2 cgroup here): evict sends SIGKILL to each process"
                    : "absent: evict sends SIGKILL to each process")
        add(
            "v1 freezer", facts.cgroup1Usable,
            (facts.freezerV1Root ?? "none")
                + (facts.freezerV1Problem.map { ": \($0)" }
                    ?? ": usable (--backend cgroup1)" + (facts.freezerV1RootExists ? "" : " (created at the first launch)")))
        add("v1 memory", m.memoryV1 != nil, m.memoryV1 ?? "not mounted")
        let pidfd = ProcessHandle.pidfdWorks
        add("pidfd", pidfd, pidfd ? "pidfd_open works (Linux 5.3+)" : "pidfd_open failed: icebox needs Linux 5.3")
        let spawn = spawnCheck(facts)
        f.append(spawn)
        let psi = FileIO.exists("/proc/pressure/memory")
        let sysResource = Capabilities.hasEffective("cap_sys_resource") ?? false
        add(
            "PSI", psi,
            psi
                ? "/proc/pressure/memory present; minimum trigger window \(sysResource ? "500ms (CAP_SYS_RESOURCE)" : "2s, in multiples of 2s (no CAP_SYS_RESOURCE)")"
                : "no /proc/pressure (kernel without CONFIG_PSI, or psi=0)")
        add("capabilities", true, Capabilities.effectiveText() ?? "unreadable")
        let paths = IceboxPaths.fromEnvironment(env)
        f += capabilityFindings(paths)
        for line in EvictionPolicy.load(from: paths.policyFile).lines {
            add("policy: " + String(line.prefix(19)).trimmed(), true, String(line.dropFirst(19)))
        }
        let criu = CriuProbe.run(environment: env, stateDir: paths.stateDir)
        add("criu", criu.works, criu.summary)
        add(
            "memory accounting", true,
            facts.cgroupRoot.map { FileIO.exists($0 + "/memory.current") } == true
                ? "memory.current (v2 memory controller)"
                : facts.memoryV1Root.map { "a v1 memory cgroup per app under \($0)" } ?? "sum of Pss from smaps_rollup")
        let signalWorks = FileIO.exists("/proc/self/stat")
        // An explicit root that cannot be used leaves auto nothing: it does not fall back to signal.
        let auto =
            facts.cgroup2Usable
            ? "cgroup2" : facts.cgroup1Usable ? "cgroup1" : facts.explicitRootUnusable ? "none" : signalWorks ? "signal" : "none"
        // The pick, and for a fallback why the better backends are out (read-only, missing...).
        add(
            "auto backend", auto != "none",
            auto == "none" && !facts.explicitRootUnusable ? "none: /proc is unreadable" : facts.autoBackendChoice)

        let features: [Feature: Bool] = [
            .cgroup2: facts.cgroup2Usable, .cgroup1: facts.cgroup1Usable, .signal: signalWorks, .psi: psi, .pidfd: pidfd,
            .clone3: spawn.ok, .cgroupKill: cgroupKill, .criu: criu.works,
        ]
        let usable = pidfd && auto != "none"
        let missing = required.filter { features[$0] != true }
        let report = Report(
            findings: f, autoBackend: auto, cgroupRoot: facts.cgroupRoot,
            features: Dictionary(uniqueKeysWithValues: features.map { ($0.key.rawValue, $0.value) }),
            required: required.map(\.rawValue), missing: missing.map(\.rawValue), usable: usable, ok: usable && missing.isEmpty)
        if args.flag("json") {
            Output.out(JSONLines.encode(report))
        } else {
            let rows = f.map { [$0.ok ? "ok" : "--", $0.check, $0.detail] }
            Output.out(
                Output.table(rows, style: { row, column in column == 0 ? (f[row].ok ? .green : .yellow) : nil }, color: Output.colorOut))
        }
        if !usable {
            Output.err(
                "icebox: icebox cannot run apps on this host: "
                    + (!pidfd
                        ? "pidfd_open does not work (Linux 5.3 or later is needed)"
                        : facts.explicitRootUnusable
                            ? "the cgroup root asked for cannot be used (fix it, unset --cgroup-root/ICEBOX_CGROUP_ROOT, or use --backend signal)"
                            : "no freeze backend is usable"))
        }
        if !missing.isEmpty {
            Output.err("icebox: required but missing: " + missing.map(\.rawValue).joined(separator: ", ") + " (see the findings above)")
        }
        return report.ok ? 0 : ExitCode.failure.rawValue
    }

    /// Whether icebox needs a delegated subtree here. Root in a user namespace (unshare -U,
    /// a rootless container) is root there only: the host's cgroups are not its own.
    static func delegationFinding(_ facts: HostFacts, uid: uid_t = getuid(), namespace: UserNamespace = .current()) -> Finding {
        let namespacedRoot = uid == 0 ? namespace.rootDescription : nil
        if uid == 0, namespacedRoot == nil {
            return Finding(check: "delegation", ok: true, detail: "running as root: no delegation needed")
        }
        let detail =
            if let namespacedRoot {
                facts.cgroup2Usable
                    ? "\(namespacedRoot): the cgroup root is writable here (a delegated subtree, or a cgroupfs of its own)"
                    : "\(namespacedRoot): the host's cgroups need delegation (a subtree owned by that uid, "
                        + "or a runtime that mounts a writable cgroupfs)"
            } else if facts.cgroup2Usable {
                "the cgroup root is writable by uid \(uid)"
            } else if facts.cgroupRootOutsideSubtree {
                "a delegated subtree, but this process's cgroup is outside it (see the cgroup root)"
            } else {
                "not root and no delegated subtree: set ICEBOX_CGROUP_ROOT to a subtree you own"
            }
        return Finding(check: "delegation", ok: facts.cgroup2Usable, detail: detail)
    }

    /// The capabilities a daemon keeps, each with why, whether this process has it (a daemon
    /// it starts keeps it then), the ones every daemon drops, and what a running daemon has.
    static func capabilityFindings(_ paths: IceboxPaths) -> [Finding] {
        var f: [Finding] = []
        func add(_ check: String, _ ok: Bool, _ detail: String) { f.append(Finding(check: check, ok: ok, detail: detail)) }
        let keptNames = DaemonCapabilities.kept.map(\.name)
        for cap in DaemonCapabilities.kept {
            let has = (cap.effective ? Capabilities.hasEffective(cap.name) : Capabilities.hasPermitted(cap.name)) ?? false
            add(cap.name, has, (has ? "kept by the daemon for " : "missing: disables ") + cap.why)
        }
        let dropped = Capabilities.allNames.filter { !keptNames.contains($0) }
        add("dropped by the daemon", true, "\(dropped.count) capabilities it never uses: " + dropped.joined(separator: " "))
        let missing = DaemonCapabilities.missingForUser()
        add(
            "--user", missing.isEmpty,
            missing.isEmpty
                ? "apps can run as another user, with no capabilities and no_new_privs"
                : "unavailable: a daemon started by this user lacks " + missing.joined(separator: ", "))
        let holder = ((try? FileIO.read(paths.lockFile)) ?? "").trimmed()
        // The lock file holds the daemon's pid in its own PID namespace (1 for a container's
        // init): believed only if that process here holds the lock file open.
        if let pid = Int32(holder), holdsOpen(pid: pid, path: paths.lockFile), let status = try? FileIO.read("/proc/\(pid)/status"),
            let hex = ProcFS.statusField("CapEff", in: status), let mask = UInt64(hex, radix: 16)
        {
            let names = Capabilities.allNames.enumerated().filter { mask & (1 << UInt64($0.offset)) != 0 }.map(\.element)
            add(
                "running daemon", names.allSatisfy(keptNames.contains),
                "pid \(pid) has " + (names.isEmpty ? "no capabilities" : names.joined(separator: " ")))
        }
        return f
    }

    static func holdsOpen(pid: Int32, path: String) -> Bool {
        let dir = "/proc/\(pid)/fd"
        return ((try? FileIO.list(dir)) ?? []).contains { FileIO.readLink(dir + "/" + $0) == path }
    }

    /// Spawns /bin/true with clone3(CLONE_INTO_CGROUP) into the cgroup doctor already runs
    /// in, to see which spawn path works here: moving a process to where it already is
    /// changes nothing, and there is no scratch cgroup to remove afterwards.
    static func spawnCheck(_ facts: HostFacts) -> Finding {
        guard let mount = facts.mounts.unifiedMount, let path = CgroupMembership.path(of: getpid(), mount: mount) else {
            return Finding(
                check: "clone3", ok: false,
                detail: "not checked: no cgroup2 filesystem, or no v2 cgroup for this process that the mount shows")
        }
        let own = Cgroup2(path: path)
        do {
            var req = SpawnRequest(executable: "/bin/true", arguments: ["true"], environment: [])
            req.cgroupDirFD = try own.openDirectory()
            defer { close(req.cgroupDirFD) }
            let spawned = try Spawner.spawn(req)
            if (try? spawned.handle.wait(until: Clock.monotonicNanos() + 5_000_000_000)) == nil {
                _ = try? spawned.handle.send(SIGKILL)
                _ = try? spawned.handle.wait(until: Clock.monotonicNanos() + 5_000_000_000)
            }
            let ok = spawned.method == .clone3IntoCgroup
            return Finding(
                check: "clone3", ok: ok,
                detail: ok
                    ? "clone3(CLONE_INTO_CGROUP | CLONE_PIDFD) works (tried into \(own.path))"
                    : "falling back to \(spawned.method.rawValue)")
        } catch {
            return Finding(check: "clone3", ok: false, detail: "test spawn into \(own.path) failed: \(error)")
        }
    }
}

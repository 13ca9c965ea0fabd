import Glibc
import IceboxSystem

/// What this host offers icebox, discovered at run time (never assumed): the cgroup
/// hierarchies, where icebox's cgroup root is, and which freezer backends work.
package struct HostFacts: Sendable {
    package var mounts: CgroupMounts
    /// The v2 directory under which icebox makes one cgroup per app.
    package var cgroupRoot: String?
    /// Why the v2 root cannot be used, if it cannot.
    package var cgroupRootProblem: String?
    package var cgroupRootPermissionDenied = false
    /// The root is delegated, but this process's cgroup is outside it (see `containmentProblem`).
    package var cgroupRootOutsideSubtree = false
    /// The v1 freezer directory for icebox's apps (same relative path as the v2 root).
    package var freezerV1Root: String?
    package var freezerV1Problem: String?
    /// Where per-app v1 memory cgroups go on hybrid hosts (no v2 memory controller): under
    /// the daemon's own v1 memory cgroup, so limits set above it still hold.
    package var memoryV1Root: String?

    /// Whether the v2 root and the v1 freezer directory existed (a discovery that may not
    /// create them judges a missing one by the directory it would be created in).
    package var cgroupRootExists = true
    package var freezerV1RootExists = true
    /// The root was asked for (--cgroup-root, ICEBOX_CGROUP_ROOT): one that cannot be used is
    /// an error for `auto`, never a silent fall back to `signal`.
    package var explicitCgroupRoot: String?

    /// --cgroup-root or ICEBOX_CGROUP_ROOT, else `<cgroup2 mount>/icebox`. The daemon creates the
    /// roots (`createRoots`); `icebox doctor` must change nothing, and judges a root that does not
    /// exist yet by the nearest directory above it.
    package static func discover(
        cgroupRootOverride: String?, explicit: Bool = true, mountinfo: String = "/proc/self/mountinfo", createRoots: Bool = true
    ) -> HostFacts {
        var mounts = CgroupMounts.read(path: mountinfo)
        // A root asked for on another cgroup2 mount than the first (a container's own one
        // beside the host's, a writable one beside a read-only one): that mount is the one.
        if let override = cgroupRootOverride,
            let chosen = mounts.unifiedMounts.filter({ CgroupMounts.covers($0.point, override) }).max(by: {
                $0.point.count < $1.point.count
            })
        {
            mounts.useUnified(chosen)
        }
        var facts = HostFacts(mounts: mounts)
        facts.explicitCgroupRoot = explicit ? cgroupRootOverride : nil
        if let unified = mounts.unified {
            let root = cgroupRootOverride ?? unified + "/icebox"
            facts.cgroupRoot = root
            do {
                // A root outside the mount (a v1 directory has a cgroup.procs too) is no v2 root.
                guard CgroupMounts.covers(unified, root) else { throw NotInside() }
                if createRoots { try FileIO.makeDirectories(root) }
                facts.cgroupRootExists = FileIO.isDirectory(root)
                // Judged where it exists: the root itself, or the directory it would be made in.
                let probe = facts.cgroupRootExists ? root : nearestExisting(root)
                if !FileIO.exists(probe + "/cgroup.procs") {
                    throw NotInside()
                } else if let denied = writeProblem(facts.cgroupRootExists ? root + "/cgroup.procs" : probe, probe: probe, mount: unified) {
                    facts.cgroupRootProblem = denied.problem
                    facts.cgroupRootPermissionDenied = !denied.readOnly
                } else if let outside = containmentProblem(root: root, mount: mounts.unifiedMount ?? CgroupMount(point: unified)) {
                    facts.cgroupRootProblem = outside
                    facts.cgroupRootPermissionDenied = true
                    facts.cgroupRootOutsideSubtree = true
                } else if !kernelHasFile("cgroup.freeze", root: root, exists: facts.cgroupRootExists, mount: unified)
                    && cgroupRootOverride == nil
                {
                    facts.cgroupRootProblem = "the kernel has no cgroup v2 freezer (cgroup.freeze needs Linux 5.2)"
                }
            } catch is NotInside {
                facts.cgroupRootProblem = "\(root) is not inside the cgroup2 filesystem at \(unified)"
            } catch let error as SystemError {
                facts.cgroupRootProblem = error.errno == EROFS ? readOnly(unified) : error.description
                facts.cgroupRootPermissionDenied = error.isPermissionDenied && error.errno != EROFS
            } catch {
                facts.cgroupRootProblem = "\(error)"
            }
        } else {
            facts.cgroupRootProblem = "no cgroup2 filesystem is mounted (see /proc/self/mountinfo)"
        }
        if let freezer = mounts.freezerV1 {
            // The same relative path as the v2 root; without cgroup2, a --cgroup-root inside
            // the v1 freezer hierarchy is where the apps go.
            var relative = "/icebox"
            if let root = facts.cgroupRoot, let unified = mounts.unified, root.hasPrefix(unified + "/") {
                relative = String(root.dropFirst(unified.count))
            } else if let root = cgroupRootOverride {
                // Asked for outside the cgroup2 mount: the freezer directory is the root itself
                // when it is in the v1 hierarchy, else there is none (not /icebox in its place).
                relative = root.hasPrefix(freezer + "/") ? String(root.dropFirst(freezer.count)) : ""
            }
            let dir = freezer + relative
            facts.freezerV1Root = dir
            if relative.isEmpty {
                facts.freezerV1Problem = "\(cgroupRootOverride ?? "") is not inside the v1 freezer hierarchy at \(freezer)"
            } else {
                do {
                    if createRoots { try FileIO.makeDirectories(dir) }
                    facts.freezerV1RootExists = FileIO.isDirectory(dir)
                    let probe = facts.freezerV1RootExists ? dir : nearestExisting(dir)
                    facts.freezerV1Problem = writeProblem(probe, probe: probe, mount: freezer)?.problem
                } catch {
                    facts.freezerV1Problem = error.errno == EROFS ? readOnly(freezer) : error.description
                }
            }
        } else {
            facts.freezerV1Problem = "no cgroup v1 freezer hierarchy is mounted"
        }
        // Per-app v1 memory cgroups wherever the v2 tree has no memory controller (hybrid and
        // v1-only hosts), if the daemon may make them, under its own memory cgroup, found through
        // the mount's root: a mount that shows a subtree (a host cgroup namespace) may not show it,
        // and then there is no place for them.
        if let memory = mounts.memoryV1Mount, facts.cgroupRoot.map({ !FileIO.exists($0 + "/memory.current") }) ?? true,
            let own = CgroupMembership.path(of: getpid(), controller: "memory", mount: memory)
        {
            let named = facts.cgroupRoot ?? (facts.freezerV1Problem == nil ? facts.freezerV1Root : nil)
            let base = named?.split(separator: "/").last.map(String.init) ?? "icebox"
            let root = (own == "/" ? "" : own) + "/" + base
            if access(nearestExisting(root), W_OK) == 0 { facts.memoryV1Root = root }
        }
        return facts
    }

    /// Why `path` (or, for a root not made yet, `probe`) cannot be written, if it cannot:
    /// a read-only mount is said to be one (the cure is a remount, not a permission).
    private static func writeProblem(_ path: String, probe: String, mount: String) -> (problem: String, readOnly: Bool)? {
        if access(path, W_OK) == 0 && access(probe, W_OK) == 0 { return nil }
        return errno == EROFS ? (readOnly(mount), true) : ("no write permission on \(probe)", false)
    }

    /// Delegation containment (cgroup-v2.rst): moving a process into a cgroup, or spawning it there
    /// with CLONE_INTO_CGROUP, needs write access to the cgroup.procs of the common ancestor of its
    /// old and new cgroups. A user whose cgroup (which its daemon inherits) is outside the
    /// delegated subtree may make cgroups there but put no process in them.
    static func containmentProblem(root: String, mount cgroupMount: CgroupMount) -> String? {
        let mount = cgroupMount.point
        // Not shown by the mount (outside its root, another namespace's view): nothing to judge.
        guard let own = CgroupMembership.path(of: getpid(), mount: cgroupMount), FileIO.isDirectory(own) else { return nil }
        var ancestor = own
        while !CgroupMounts.covers(ancestor, root), let slash = ancestor.lastIndex(of: "/"), ancestor != mount {
            ancestor = String(ancestor[..<slash])
        }
        let procs = ancestor + "/cgroup.procs"
        guard CgroupMounts.covers(ancestor, root), FileIO.exists(procs), access(procs, W_OK) != 0 else { return nil }
        return "this process's cgroup \(own) is outside the subtree: moving a process into \(root) needs write access to "
            + "\(ancestor)/cgroup.procs, their common ancestor (start icebox from a cgroup inside the subtree)"
    }

    private static func readOnly(_ mount: String) -> String { "the cgroup filesystem at \(mount) is mounted read-only" }

    private struct NotInside: Error {}

    /// The backend `auto` picks here and, for a fallback, why the better ones are out:
    /// "signal (cgroup2: …; cgroup1: …)". Doctor shows it; the daemon logs it when it starts.
    package var autoBackendChoice: String {
        let v2 = "cgroup2: " + (cgroupRootProblem ?? "unknown")
        if cgroup2Usable { return BackendKind.cgroup2.rawValue }
        if cgroup1Usable { return "\(BackendKind.cgroup1.rawValue) (\(v2))" }
        if explicitRootUnusable {
            return "none: the cgroup root \(explicitCgroupRoot ?? "") cannot be used (\(v2); cgroup1: \(freezerV1Problem ?? "unknown"))"
        }
        return "\(BackendKind.signal.rawValue) (\(v2); cgroup1: \(freezerV1Problem ?? "unknown"))"
    }

    package var cgroup2Usable: Bool { cgroupRoot != nil && cgroupRootProblem == nil }
    package var cgroup1Usable: Bool { freezerV1Root != nil && freezerV1Problem == nil }
    /// A cgroup root was asked for, and neither cgroup backend can use it.
    package var explicitRootUnusable: Bool { explicitCgroupRoot != nil && !cgroup2Usable && !cgroup1Usable }

    /// The backend for a request: `auto` picks cgroup2, else cgroup1, else signal.
    package func resolve(_ requested: BackendChoice) throws(IceboxError) -> BackendKind {
        switch requested {
        case .auto:
            if cgroup2Usable { return .cgroup2 }
            if cgroup1Usable { return .cgroup1 }
            if explicitRootUnusable, let root = explicitCgroupRoot {
                let fix = "fix it (see icebox doctor), unset --cgroup-root/ICEBOX_CGROUP_ROOT, or ask for --backend signal"
                throw IceboxError(
                    cgroupRootPermissionDenied ? .permission : .unavailable,
                    "the cgroup root \(root) cannot be used: \(cgroupRootProblem ?? "unknown")"
                        + (freezerV1Problem.map { "; v1 freezer: \($0)" } ?? ""),
                    hint: cgroupRootPermissionDenied ? IceboxError.rootHint(fix) : fix)
            }
            return .signal
        case .cgroup2:
            if cgroup2Usable { return .cgroup2 }
            throw IceboxError(
                cgroupRootPermissionDenied ? .permission : .unavailable,
                "backend cgroup2 is unavailable: \(cgroupRootProblem ?? "unknown")",
                hint: cgroupRootPermissionDenied
                    ? IceboxError.rootHint("point --cgroup-root at a delegated subtree; see icebox doctor")
                    : "use --backend cgroup1 or signal; see icebox doctor")
        case .cgroup1:
            if cgroup1Usable { return .cgroup1 }
            throw IceboxError(
                .unavailable, "backend cgroup1 is unavailable: \(freezerV1Problem ?? "unknown")",
                hint: "mount the v1 freezer (mount -t cgroup -o freezer none /sys/fs/cgroup/freezer) or use --backend cgroup2 or signal")
        case .signal:
            return .signal
        }
    }

    package var supportsCgroupKill: Bool {
        guard let root = cgroupRoot, let mount = mounts.unified else { return false }
        return Self.kernelHasFile("cgroup.kill", root: root, exists: cgroupRootExists, mount: mount)
    }

    /// The deepest existing directory on the way to `path` (`path` itself if it exists).
    package static func nearestExisting(_ path: String) -> String {
        var dir = path
        while !FileIO.isDirectory(dir), let slash = dir.lastIndex(of: "/") {
            dir = slash == dir.startIndex ? "/" : String(dir[..<slash])
        }
        return dir
    }

    /// Whether this kernel's v2 cgroups have an interface file (cgroup.freeze, cgroup.kill). Every
    /// cgroup but the root has them, so a root that does not exist yet is judged by an existing
    /// non-root cgroup: the one above it, or one beside it under the mount.
    static func kernelHasFile(_ name: String, root: String, exists: Bool, mount: String) -> Bool {
        if exists { return FileIO.exists(root + "/" + name) }
        let above = nearestExisting(root)
        if above != mount && above.hasPrefix(mount + "/") { return FileIO.exists(above + "/" + name) }
        // No children to look at (the mount unreadable): the kernel release below decides instead.
        let children = ((try? FileIO.list(mount)) ?? []).map { mount + "/" + $0 }.filter { FileIO.isDirectory($0) }
        if !children.isEmpty { return children.contains { FileIO.exists($0 + "/" + name) } }
        // No cgroup to look at without making one: go by the kernel release that added the file.
        let added: [String: (Int, Int)] = ["cgroup.freeze": (5, 2), "cgroup.kill": (5, 14)]
        // An unreadable release (no /proc): the file is taken as missing, as on an older kernel.
        guard let needed = added[name], let release = try? FileIO.read("/proc/sys/kernel/osrelease") else { return false }
        let parts = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
        return parts.count == 2 && (parts[0], parts[1]) >= needed
    }
}

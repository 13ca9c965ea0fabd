import Glibc
import IceboxSystem

/// What `icebox adopt` reads from /proc and the cgroup tree to find a process tree and to decide
/// whether it may be taken over. Pure parsers, the /proc root a parameter, so that each is tested
/// without root against files a test writes (`AdoptionCheckTests`).
enum AdoptionCheck {
    /// PF_KTHREAD in the flags of /proc/PID/stat (include/linux/sched.h).
    static let kernelThreadFlag: UInt32 = 0x0020_0000

    /// Field 9 (flags) of a /proc/PID/stat line.
    static func flags(inStatLine text: String) -> UInt32? {
        guard let rest = ProcFS.statFieldsAfterName(text), rest.count > 6 else { return nil }
        return UInt32(rest[6])
    }

    /// A kernel thread: PF_KTHREAD set, or (a kernel that hid the flag) a child of kthreadd (ppid
    /// 2) with no executable. Moving one into a cgroup fails or, worse, freezes a kernel worker.
    static func isKernelThread(statLine: String, hasExecutable: Bool) -> Bool {
        if let flags = flags(inStatLine: statLine), flags & kernelThreadFlag != 0 { return true }
        return ProcFS.parseStat(statLine)?.ppid == 2 && !hasExecutable
    }

    /// The pids of /proc/PID/task/TID/children ("12 34 ", space separated, maybe empty).
    static func pids(inChildrenList text: String) -> [pid_t] {
        text.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { pid_t($0) }.filter { $0 > 0 }
    }

    /// The real uid of a process, the first number of the `Uid:` line of /proc/PID/status.
    static func realUID(inStatus text: String) -> uid_t? {
        let fields = ProcFS.statusField("Uid", in: text)?.split(whereSeparator: { $0 == "\t" || $0 == " " })
        return fields?.first.flatMap { uid_t($0) }
    }

    /// `root` and all its descendants, found through each thread's children list (a child is listed
    /// under the thread that forked it). Where that file is missing (a kernel without
    /// CONFIG_PROC_CHILDREN) a scan of every process's parent does the same. Bounded: at most
    /// `limit` processes (a tree that keeps growing past that is refused by the caller).
    static func tree(root: pid_t, procRoot: String = "/proc", limit: Int = 100_000) -> [pid_t] {
        guard FileIO.exists("\(procRoot)/\(root)/task") else { return [] }
        if !FileIO.exists("\(procRoot)/\(root)/task/\(root)/children") { return treeByParent(root: root, procRoot: procRoot, limit: limit) }
        return walk(from: root, limit: limit) { pid in
            // A process gone meanwhile has no tasks: not part of the tree.
            guard let tasks = try? FileIO.list("\(procRoot)/\(pid)/task") else { return nil }
            // A task gone meanwhile (or a kernel without the children file) has no children to add.
            return tasks.flatMap { pids(inChildrenList: (try? FileIO.read("\(procRoot)/\(pid)/task/\($0)/children")) ?? "") }
        }
    }

    /// The same tree from every process's parent pid (one pass over /proc).
    static func treeByParent(root: pid_t, procRoot: String, limit: Int) -> [pid_t] {
        var children: [pid_t: [pid_t]] = [:]
        // An unlistable proc root has no processes: the tree is the root alone.
        for name in (try? FileIO.list(procRoot)) ?? [] {
            guard let pid = pid_t(name), let st = ProcFS.stat(pid: pid, procRoot: procRoot) else { continue }
            children[st.ppid, default: []].append(pid)
        }
        return walk(from: root, limit: limit) { FileIO.exists("\(procRoot)/\($0)") ? children[$0] ?? [] : nil }
    }

    /// Depth-first from `root`, each pid once, at most `limit`; `children(pid)`: nil for a process gone (not part of the tree).
    private static func walk(from root: pid_t, limit: Int, children: (pid_t) -> [pid_t]?) -> [pid_t] {
        var out: [pid_t] = []
        var seen = Set<pid_t>()
        var queue = [root]
        while let pid = queue.popLast(), out.count < limit {
            guard seen.insert(pid).inserted, let next = children(pid) else { continue }
            out.append(pid)
            queue.append(contentsOf: next)
        }
        return out
    }

    /// A cgroup another manager keeps: the unit or container its path names.
    struct ForeignOwner: Equatable {
        enum Kind: Equatable {
            case systemdUnit, containerRuntime
        }
        let kind: Kind
        /// The unit's or container's directory name (`y.service`, `docker-1f2e.scope`).
        let name: String
        /// The cgroup path (relative to the mount) of that directory, to look for a delegation.
        let path: String
    }

    /// The innermost unit or container that a cgroup path (relative to its mount: "/a/b.service/c")
    /// lies in, or nil: systemd names its cgroups after units, container runtimes after the
    /// container. Such a manager moves, kills and accounts its processes by that cgroup: taking
    /// them out of it breaks its bookkeeping, unless it delegated the subtree.
    static func foreignOwner(ofCgroup relative: String) -> ForeignOwner? {
        let parts = relative.split(separator: "/").map(String.init)
        let runtimePrefixes = ["docker-", "libpod-", "crio-", "cri-containerd-", "containerd-", "lxc.payload."]
        let runtimeDirectories: Set<String> = ["docker", "kubepods", "kubepods.slice", "libpod_parent", "lxc", "containerd"]
        for index in parts.indices.reversed() {
            let part = parts[index]
            let path = "/" + parts[...index].joined(separator: "/")
            let parent = index > 0 ? parts[index - 1] : ""
            if runtimePrefixes.contains(where: { part.hasPrefix($0) }) || runtimeDirectories.contains(parent) {
                return ForeignOwner(kind: .containerRuntime, name: part, path: path)
            }
            if part.hasSuffix(".service") || part.hasSuffix(".scope") || part.hasSuffix(".slice") {
                // The root slice holds everything and only slices: never a unit's processes.
                if part == "-.slice" { continue }
                return ForeignOwner(kind: .systemdUnit, name: part, path: path)
            }
        }
        return nil
    }

    /// The refusal for a foreign owner: names it and how to hand the cgroup over.
    static func refusal(for owner: ForeignOwner, what: String) -> IceboxError {
        switch owner.kind {
        case .systemdUnit:
            return IceboxError(
                .permission,
                "refusing to adopt \(what): it is in the cgroup of the systemd unit \(owner.name) (\(owner.path)), which systemd manages",
                hint:
                    "let the unit delegate its cgroup (Delegate=yes in \(owner.name), or start it with systemd-run --scope -p Delegate=yes ...), or run it under icebox launch instead"
            )
        case .containerRuntime:
            return IceboxError(
                .permission,
                "refusing to adopt \(what): it is in the cgroup of the container \(owner.name) (\(owner.path)), which its runtime manages",
                hint: "freeze it with the runtime (docker pause, podman pause), or run icebox inside the container")
        }
    }
}

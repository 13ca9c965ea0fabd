import Glibc
import IceboxCore
import IceboxSystem

/// icebox freeze / thaw --pid PID | --cgroup PATH: one shot, no daemon, for process trees and
/// cgroups icebox did not launch.
enum OneShotFreeze {
    static let options = [
        OptionSpec(name: "pid", value: "PID", help: "the process and all its descendants (SIGSTOP/SIGCONT)"),
        OptionSpec(name: "cgroup", value: "PATH", help: "a cgroup v2 directory, or a v1 freezer cgroup directory"),
        OptionSpec(name: "timeout", value: "DUR", help: "give up (and roll back) after this (default 10s)"),
    ]

    /// The freezer for the target, what to call the target, and how many tasks it has now
    /// (threads for a process tree, which SIGSTOP acts on; processes for a cgroup).
    static func freezer(_ args: ParsedArguments, spec: CommandSpec) throws(IceboxError) -> (any Freezer, String, () -> Int) {
        switch (args.value("pid"), args.value("cgroup")) {
        case (let pidText?, nil):
            guard let pid = pid_t(pidText), pid > 1 else {
                throw IceboxError(.usage, "invalid --pid '\(pidText)'", hint: "give the pid of a running process (not 1)")
            }
            guard FileIO.exists("/proc/\(pid)") else { throw IceboxError(.failure, "no process with pid \(pid)") }
            if pid == getpid() { throw IceboxError(.usage, "icebox cannot freeze itself") }
            if SignalFreezer.processTree(root: pid).contains(getpid()) {
                throw IceboxError(
                    .usage, "refusing to freeze pid \(pid): icebox itself (pid \(getpid())) is one of its descendants",
                    hint:
                        "stopping the tree would stop icebox before it could confirm or roll back; give a pid whose tree does not hold this command"
                )
            }
            let threads = { SignalFreezer.processTree(root: pid).reduce(0) { $0 + ProcFS.threads(of: $1).count } }
            return (SignalFreezer { SignalFreezer.processTree(root: pid) }, "pid \(pid)", threads)
        case (nil, let path?):
            try refuseContainingCaller(path)
            let procs = { ((try? FileIO.read(path + "/cgroup.procs")) ?? "").split(separator: "\n").count }
            if FileIO.exists(path + "/cgroup.freeze") { return (Cgroup2Freezer(cgroup: Cgroup2(path: path)), path, procs) }
            if FileIO.exists(path + "/freezer.state") { return (Cgroup1Freezer(path: path), path, procs) }
            if !FileIO.isDirectory(path) { throw IceboxError(.failure, "no cgroup at \(path)") }
            throw IceboxError(
                .unavailable, "\(path) has neither cgroup.freeze (cgroup v2, Linux 5.2) nor freezer.state (v1 freezer)",
                hint: "a v2 root cgroup cannot be frozen; give a child cgroup")
        default:
            throw ArgumentParser.usage("give exactly one of --pid PID or --cgroup PATH", spec)
        }
    }

    /// A cgroup that holds this process (in it or below) would freeze icebox with it, before
    /// the freeze is confirmed or rolled back (in a container, `--cgroup /sys/fs/cgroup` is the
    /// whole container: only a thaw from outside recovers it). The kernel's list of the
    /// subtree's processes decides, whatever namespace or mount the path was reached through.
    static func refuseContainingCaller(_ path: String) throws(IceboxError) {
        guard FileIO.exists(path + "/cgroup.procs") else { return }
        let own = getpid()
        guard CgroupTree.processes(path).contains(own) else { return }
        throw IceboxError(
            .usage,
            "refusing to freeze \(path): it contains icebox itself (pid \(own)), which would freeze with it and could not "
                + "confirm or roll back",
            hint: "freeze a cgroup that does not hold this shell, or run icebox from outside it (from the host, for a container's root)")
    }

    static func tasks(_ n: Int, _ backend: BackendKind) -> String {
        backend == .signal ? Plural.count(n, "thread") : Plural.count(n, "process", "processes")
    }

    static func run(thaw: Bool, _ args: ParsedArguments, spec: CommandSpec) throws(IceboxError) -> Int32 {
        let (freezer, what, taskCount) = try freezer(args, spec: spec)
        let timeout = try args.duration("timeout") ?? 10_000_000_000
        // Read the kernel's state first: freezing what is frozen (or thawing what is not) is
        // a no-op that says so, not a latency measured on nothing.
        if thaw ? !freezer.isFrozen() && !freezer.freezeStarted() : freezer.isFrozen() {
            Output.out("\(what)  \(thaw ? "not frozen" : "already frozen") (\(freezer.kind.rawValue), \(tasks(taskCount(), freezer.kind)))")
            return 0
        }
        // A process we may not signal would never stop (or continue): say so now, not after
        // the time-out. A thaw probes with SIGCONT itself, which a process in our session
        // accepts whoever owns it.
        if let pidText = args.value("pid"), let pid = pid_t(pidText), kill(pid, thaw ? SIGCONT : 0) < 0, errno == EPERM {
            throw IceboxError(
                .permission, "\(thaw ? "thaw" : "freeze") pid \(pid): not permitted to signal it (it belongs to another user)",
                hint: "run icebox \(thaw ? "thaw" : "freeze") as that process's owner or as root")
        }
        let deadline = Clock.monotonicNanos().saturatingAdd(timeout)
        do {
            let report = thaw ? try freezer.thaw(deadline: deadline) : try freezer.freeze(deadline: deadline)
            Output.out(
                "\(what)  \(thaw ? "thawed" : "frozen") in \(DurationText.format(report.durationNanos)) (\(report.backend.rawValue), \(tasks(report.tasks, report.backend)))"
            )
            return 0
        } catch {
            if case .system(let e) = error, e.isPermissionDenied {
                throw IceboxError(
                    .permission, "\(thaw ? "thaw" : "freeze") \(what): \(e)",
                    hint: IceboxError.rootHint("run it as the owner of the cgroup"))
            }
            throw IceboxError(.failure, "\(thaw ? "thaw" : "freeze") \(what): \(error)")
        }
    }
}

enum FreezeCommand: IceboxCommand {
    static let name = "freeze"
    static let spec = CommandSpec(
        name: name, usage: "icebox freeze --pid PID | --cgroup PATH [--timeout DUR]",
        summary: "freeze a process tree or cgroup now (no daemon) and confirm it", options: OneShotFreeze.options,
        operands: .nothing)
    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 { try OneShotFreeze.run(thaw: false, args, spec: spec) }
}

enum ThawCommand: IceboxCommand {
    static let name = "thaw"
    static let spec = CommandSpec(
        name: name, usage: "icebox thaw --pid PID | --cgroup PATH [--timeout DUR]",
        summary: "thaw a process tree or cgroup (no daemon) and confirm it", options: OneShotFreeze.options,
        operands: .nothing)
    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 { try OneShotFreeze.run(thaw: true, args, spec: spec) }
}

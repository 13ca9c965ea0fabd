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

    static func freezer(_ args: ParsedArguments, spec: CommandSpec) throws(IceboxError) -> (any Freezer, String) {
        switch (args.value("pid"), args.value("cgroup")) {
        case (let pidText?, nil):
            guard let pid = pid_t(pidText), pid > 1 else {
                throw IceboxError(.usage, "invalid --pid '\(pidText)'", hint: "give the pid of a running process (not 1)")
            }
            guard FileIO.exists("/proc/\(pid)") else { throw IceboxError(.failure, "no process with pid \(pid)") }
            if pid == getpid() { throw IceboxError(.usage, "icebox cannot freeze itself") }
            return (SignalFreezer { SignalFreezer.processTree(root: pid) }, "pid \(pid)")
        case (nil, let path?):
            if FileIO.exists(path + "/cgroup.freeze") { return (Cgroup2Freezer(cgroup: Cgroup2(path: path)), path) }
            if FileIO.exists(path + "/freezer.state") { return (Cgroup1Freezer(path: path), path) }
            if !FileIO.isDirectory(path) { throw IceboxError(.failure, "no cgroup at \(path)") }
            throw IceboxError(
                .unavailable, "\(path) has neither cgroup.freeze (cgroup v2, Linux 5.2) nor freezer.state (v1 freezer)",
                hint: "a v2 root cgroup cannot be frozen; give a child cgroup")
        default:
            throw ArgumentParser.usage("give exactly one of --pid PID or --cgroup PATH", spec)
        }
    }

    static func run(thaw: Bool, _ args: ParsedArguments, spec: CommandSpec) throws(IceboxError) -> Int32 {
        let (freezer, what) = try freezer(args, spec: spec)
        let timeout = try ArgumentParser.duration(args.value("timeout"), option: "timeout", default: 10_000_000_000)
        let deadline = Clock.monotonicNanos() + timeout
        do {
            let report = thaw ? try freezer.thaw(deadline: deadline) : try freezer.freeze(deadline: deadline)
            Output.out(
                "\(what)  \(thaw ? "thawed" : "frozen") in \(DurationText.format(report.durationNanos)) (\(report.backend.rawValue), \(report.tasks) \(report.backend == .signal ? "threads" : "processes"))"
            )
            return 0
        } catch {
            if case .system(let e) = error, e.isPermissionDenied {
                throw IceboxError(
                    .permission, "\(thaw ? "thaw" : "freeze") \(what): \(e)", hint: "run as root or as the owner of the cgroup")
            }
            throw IceboxError(.failure, "\(thaw ? "thaw" : "freeze") \(what): \(error)")
        }
    }
}

enum FreezeCommand: IceboxCommand {
    static let spec = CommandSpec(
        name: "freeze", usage: "icebox freeze --pid PID | --cgroup PATH [--timeout DUR]",
        summary: "freeze a process tree or cgroup now (no daemon) and confirm it", options: OneShotFreeze.options)
    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 { try OneShotFreeze.run(thaw: false, args, spec: spec) }
}

enum ThawCommand: IceboxCommand {
    static let spec = CommandSpec(
        name: "thaw", usage: "icebox thaw --pid PID | --cgroup PATH [--timeout DUR]",
        summary: "thaw a process tree or cgroup (no daemon) and confirm it", options: OneShotFreeze.options)
    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 { try OneShotFreeze.run(thaw: true, args, spec: spec) }
}

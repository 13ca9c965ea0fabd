import IceboxCore

/// icebox adopt NAME (--pid PID | --cgroup PATH): take over processes that run already.
enum AdoptCommand: IceboxCommand {
    static let name = "adopt"
    /// The launch options that apply to a process icebox did not start (the rest, such as
    /// the command, --env, --cwd, --ready and --user, are what a spawn sets up). Parsed by
    /// `LaunchArguments.build`, as for launch.
    static let launchOptionNames: Set<String> = [
        "backend", "grace", "max-grace", "background-signal", "foreground-signal", "priority", "compact-after", "cgroup-root",
        "no-autostart",
    ]
    static let spec = CommandSpec(
        name: name, usage: "icebox adopt NAME (--pid PID | --cgroup PATH) [OPTIONS]",
        summary: "take over a running process tree or cgroup as the app NAME",
        options: [
            OptionSpec(name: "pid", value: "PID", help: "the process and all its descendants (it is the app's main process)"),
            OptionSpec(
                name: "cgroup", value: "PATH", help: "every process of this cgroup and its sub-cgroups (main: one whose parent is outside)"),
        ] + LaunchArguments.options.filter { launchOptionNames.contains($0.name) },
        details:
            "Every process is moved into a fresh cgroup of the app, frozen on arrival (none forked meanwhile is left out), then thawed. "
            + "From then on suspend, resume, switch, terminate, evict and the memory policy work on it as on a launched app. "
            + "icebox is not its parent: its exit status is unknown, its output is not in icebox logs, and relaunch uses "
            + "the command line read from /proc. icebox release NAME hands it back.",
        operands: Operands(max: 1, text: "one app name"))

    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        guard let name = args.positionals.first else {
            throw ArgumentParser.usage("adopt needs a NAME and --pid PID or --cgroup PATH", spec)
        }
        let source: AdoptSource
        switch (args.value("pid"), args.value("cgroup")) {
        case (let text?, nil):
            guard let pid = Int32(text), pid > 0 else {
                throw IceboxError(.usage, "invalid --pid '\(text)'", hint: "give the pid of a running process")
            }
            source = .pid(pid)
        case (nil, let path?):
            source = .cgroup(path)
        default:
            throw ArgumentParser.usage("give exactly one of --pid PID or --cgroup PATH", spec)
        }
        // The command is read from /proc by the daemon; the placeholder only satisfies build.
        let launch = try LaunchArguments.build(name: name, nameIsDefault: false, command: ["adopted"], args, attached: false)
        var client = LaunchArguments.client(args)
        return try client.perform(.adopt(options: AdoptOptions(launch, source: source)))
    }
}

/// icebox release NAME: hand an app back, still running, no longer supervised.
enum ReleaseCommand: IceboxCommand {
    static let name = "release"
    static let spec = CommandSpec(
        name: name, usage: "icebox release NAME",
        summary: "hand an app back, thawed and still running, to the cgroup it came from",
        options: LifecycleRequest.common,
        details:
            "An adopted app goes back to the cgroup it came from if that still exists, else to the daemon's own; a launched app "
            + "to the daemon's own cgroup. Its cgroups are removed and its record dropped. Refused (exit 75) while it is "
            + "launching, in its grace, or being frozen, thawed or ended.",
        operands: Operands(max: 1, text: "one app name"))

    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        try LifecycleRequest.send(args, spec: spec) { .release(name: $0[0]) }
    }
}

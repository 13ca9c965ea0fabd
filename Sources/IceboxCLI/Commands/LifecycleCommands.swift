import IceboxCore

// suspend, resume, switch, terminate and evict have the same shape (names in, one request
// out, the daemon's lines printed), so they share one file and one helper.

enum LifecycleRequest {
    static let common = [
        OptionSpec(name: "no-autostart", value: nil, help: "fail (exit 69) rather than start a daemon"),
        OptionSpec(name: "cgroup-root", value: "PATH", help: "cgroup root for a daemon this starts"),
    ]

    /// Checks the names, builds the request from them and sends it.
    static func send(
        _ args: ParsedArguments, spec: CommandSpec, _ request: ([String]) throws(IceboxError) -> ControlRequest
    ) throws(IceboxError) -> Int32 {
        // switch, relaunch and release take one name (the parser refuses more), the others any number.
        let needs = spec.operands?.max == 1 ? "takes exactly one app name" : "needs at least one app name"
        if args.positionals.isEmpty { throw ArgumentParser.usage("\(spec.name) \(needs)", spec) }
        for name in args.positionals { try AppName.validate(name) }
        let request = try request(args.positionals)
        var client = LaunchArguments.client(args)
        return try client.perform(request)
    }
}

enum SuspendCommand: IceboxCommand {
    static let name = "suspend"
    static let spec = CommandSpec(
        name: name, usage: "icebox suspend NAME... [--grace DUR]",
        summary: "Active → Background (notice, grace) → Suspended; returns when frozen",
        options: [
            OptionSpec(name: "grace", value: "DUR", help: "this suspend's grace instead of the app's --grace (0: freeze at once)")
        ] + LifecycleRequest.common)
    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        let grace = try args.duration("grace")
        return try LifecycleRequest.send(args, spec: spec) { .suspend(names: $0, graceNanos: grace) }
    }
}

enum ResumeCommand: IceboxCommand {
    static let name = "resume"
    static let spec = CommandSpec(
        name: name, usage: "icebox resume NAME... [--wait-ready]",
        summary: "Suspended → Active; returns when thawed",
        options: [
            OptionSpec(name: "wait-ready", value: nil, help: "for --ready notify apps: return once the app says READY=1 again")
        ] + LifecycleRequest.common)
    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        let waitReady = args.flag("wait-ready")
        return try LifecycleRequest.send(args, spec: spec) { .resume(names: $0, waitReady: waitReady) }
    }
}

enum SwitchCommand: IceboxCommand {
    static let name = "switch"
    static let spec = CommandSpec(
        name: name, usage: "icebox switch NAME",
        summary: "resume NAME and send the active app(s) to the background", options: LifecycleRequest.common,
        operands: Operands(max: 1, text: "one app name"))
    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        try LifecycleRequest.send(args, spec: spec) { .switchTo(name: $0[0]) }
    }
}

enum TerminateCommand: IceboxCommand {
    static let name = "terminate"
    static let spec = CommandSpec(
        name: name, usage: "icebox terminate NAME... [--timeout DUR]",
        summary: "SIGTERM (a frozen app is thawed first), SIGKILL after the timeout; reaped",
        options: [OptionSpec(name: "timeout", value: "DUR", help: "time before SIGKILL (default 10s)")] + LifecycleRequest.common)
    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        let timeout = try args.duration("timeout") ?? 10_000_000_000
        return try LifecycleRequest.send(args, spec: spec) { .terminate(names: $0, timeoutNanos: timeout) }
    }
}

enum EvictCommand: IceboxCommand {
    static let name = "evict"
    static let spec = CommandSpec(
        name: name, usage: "icebox evict [--to-disk] NAME...",
        summary: "kill without notice (as memory pressure does), reap, record as evicted",
        options: [
            OptionSpec(
                name: "to-disk", value: nil,
                help:
                    "checkpoint the app to disk with CRIU instead of killing it (it must be suspended and launched with --pid-namespace); resume restores it; falls back to a kill if the dump fails"
            )
        ] + LifecycleRequest.common)
    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        try LifecycleRequest.send(args, spec: spec) { .evict(names: $0, toDisk: args.flag("to-disk")) }
    }
}

enum RelaunchCommand: IceboxCommand {
    static let name = "relaunch"
    static let spec = CommandSpec(
        name: name, usage: "icebox relaunch NAME",
        summary: "start an ended app again with its last command line and options (detached)",
        options: LifecycleRequest.common,
        details: "The app gets ICEBOX_LAUNCH_REASON=restore if it was evicted or killed while suspended, else fresh.",
        operands: Operands(max: 1, text: "one app name"))
    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        try LifecycleRequest.send(args, spec: spec) { .relaunch(name: $0[0]) }
    }
}

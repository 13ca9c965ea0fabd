import IceboxCore

/// The eviction policy's settings as options, shared by `icebox daemon` and `icebox policy set`.
enum PolicyOptions {
    static let options: [OptionSpec] = [
        OptionSpec(name: "memory-budget", value: "SIZE|none", help: "the apps together may use at most this (2G, 512MiB)"),
        OptionSpec(
            name: "pressure", value: "SPEC|default|none",
            help: "evict on a PSI trigger, e.g. 'some 150ms/2s' (= default; windows: multiples of 2s without CAP_SYS_RESOURCE)"),
        OptionSpec(
            name: "pressure-scope", value: "system|apps", help: "/proc/pressure/memory, or the apps' parent cgroup (default system)"),
        OptionSpec(name: "max-suspended", value: "N|none", help: "evict the oldest suspended apps beyond N"),
        OptionSpec(name: "eviction-grace", value: "DUR", help: "notice and grace left to a victim not yet suspended (default 1s)"),
        OptionSpec(name: "protect-active", value: "yes|no", help: "never evict an active app (default yes)"),
        OptionSpec(name: "on-lock-contention", value: "thaw|evict", help: "a frozen app holding a lock others wait on (default thaw)"),
        OptionSpec(name: "compact-after", value: "DUR|none", help: "compact suspended apps this long after freezing (default never)"),
        OptionSpec(name: "compact-mode", value: "pageout|cold", help: "pageout reclaims now, cold only under pressure (default pageout)"),
        OptionSpec(
            name: "evict-to", value: "kill|disk",
            help:
                "what the policy does to a victim: kill it (default), or checkpoint it to disk with CRIU when it can (--pid-namespace apps; others are killed)"
        ),
        OptionSpec(
            name: "criu-timeout", value: "DUR",
            help: "how long one criu dump or restore may run before it is killed and fails (default 2m)"),
    ]

    /// The settings given on the command line, parsed here so mistakes exit 64.
    static func settings(_ args: ParsedArguments) throws(IceboxError) -> [(key: String, value: String, setting: PolicySetting)] {
        var out: [(key: String, value: String, setting: PolicySetting)] = []
        for key in PolicySetting.keys {
            guard let value = args.value(key) else { continue }
            out.append((key, value, try PolicySetting.parse(key: key, value: value)))
        }
        return out
    }
}

/// icebox policy [set ...]: read or change the running daemon's eviction policy.
enum PolicyCommand: IceboxCommand {
    static let name = "policy"
    static let spec = CommandSpec(
        name: name, usage: "icebox policy [set [SETTINGS]] [--json]",
        summary: "show the eviction policy, or change it on the running daemon",
        options: PolicyOptions.options + [OptionSpec(name: "json", value: nil, help: "the policy as JSON", short: "j")]
            + LifecycleRequest.common,
        details: "Settings given without 'set' are an error; 'none' clears a trigger. The policy is kept in the state directory.",
        operands: Operands(max: 1, text: "one operand, 'set'"))

    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        let settings = try PolicyOptions.settings(args)
        let setting = args.positionals.first == "set"
        if !args.positionals.isEmpty && !setting {
            throw ArgumentParser.usage(
                "policy takes no operand but 'set'" + Suggestions.didYouMean(args.positionals[0], among: ["set"]), spec)
        }
        if !setting && !settings.isEmpty {
            throw ArgumentParser.usage("to change the policy, write: icebox policy set --\(settings[0].key) \(settings[0].value)", spec)
        }
        if setting && settings.isEmpty { throw ArgumentParser.usage("policy set needs at least one setting", spec) }
        let request: ControlRequest = setting ? .setPolicy(settings: settings.map(\.setting)) : .policy
        var client = LaunchArguments.client(args)
        var shown: EvictionPolicy?
        let code = try client.perform(request, onPolicy: { shown = $0 })
        if let shown {
            if args.flag("json") { Output.out(JSONLines.encode(shown)) } else { for line in shown.lines { Output.out(line) } }
        }
        return code
    }
}

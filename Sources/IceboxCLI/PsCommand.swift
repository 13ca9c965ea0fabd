import IceboxCore
import IceboxSystem

/// icebox ps: the apps with their state, timings and memory.
enum PsCommand: IceboxCommand {
    static let spec = CommandSpec(
        name: "ps", usage: "icebox ps [--json] [--all]",
        summary: "list the apps: state, time in state, pid, backend, memory, freeze/thaw latency, status",
        options: [
            OptionSpec(name: "json", value: nil, help: "one JSON array (durations in integer nanoseconds)"),
            OptionSpec(name: "all", value: nil, help: "include ended apps with their exit status or eviction"),
            OptionSpec(name: "no-autostart", value: nil, help: "never start a daemon (to re-adopt apps a stopped one left)"),
            OptionSpec(name: "cgroup-root", value: "PATH", help: "cgroup root for a daemon this starts"),
        ])

    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        // ps starts a daemon only when the registry says apps were left running (after a
        // daemon crash or --stop): that daemon re-adopts them, so ps shows their true state.
        // Otherwise the registry alone says what ended.
        let env = ProcessEnvironment.dictionary
        var records: [AppRecord] = []
        let request = ControlRequest.ps(all: args.flag("all"))
        var client = DaemonClient(environment: env, autostartFlagOff: true, cgroupRoot: args.value("cgroup-root"))
        do {
            let code = try client.perform(request) { records = $0 }
            if code != 0 { return code }
        } catch  where error.code == .unavailable {
            let saved = Registry.load(directory: client.paths.registryDir)
            if saved.contains(where: { !$0.state.isEnded }) && !args.flag("no-autostart") {
                var starting = DaemonClient(environment: env, autostartFlagOff: false, cgroupRoot: args.value("cgroup-root"))
                let code = try starting.perform(request) { records = $0 }
                if code != 0 { return code }
            } else if args.flag("all") {
                records = saved
            }
        }
        if args.flag("json") {
            Output.out(JSONLines.encode(records))
            return 0
        }
        let now = Clock.monotonicNanos()
        var rows = [["NAME", "PID", "STATE", "SINCE", "BACKEND", "MEMORY", "LAST FREEZE", "LAST THAW", "STATUS"]]
        for r in records {
            let status = r.state.isEnded ? (r.ending ?? "") : (r.statusText ?? "")
            rows.append([
                r.name, String(r.pid), r.state.rawValue,
                r.state.isEnded ? r.sinceWall : DurationText.format(now > r.sinceMonotonicNanos ? now - r.sinceMonotonicNanos : 0),
                r.backend.rawValue,
                r.memoryBytes.map(SizeText.format) ?? "–",
                r.lastFreezeNanos.map(DurationText.format) ?? "–",
                r.lastThawNanos.map(DurationText.format) ?? "–",
                status,
            ])
        }
        for line in Output.table(rows) { Output.out(line) }
        return 0
    }
}

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
        ])

    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        // ps never starts a daemon: with none running, the registry says what ended.
        var client = DaemonClient(environment: ProcessEnvironment.dictionary, autostartFlagOff: true, cgroupRoot: nil)
        var records: [AppRecord] = []
        var request = ControlRequest(command: "ps")
        request.all = args.flag("all")
        do {
            let code = try client.perform(request) { records = $0 }
            if code != 0 { return code }
        } catch  where error.code == .unavailable {
            if args.flag("all"), let text = try? FileIO.read(client.paths.registry),
                let registry = JSONLines.decode(Registry.self, text)
            {
                records = registry.apps
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

import Glibc
import IceboxCore
import IceboxSystem

/// icebox ps: the apps with their state, timings and memory.
enum PsCommand: IceboxCommand {
    static let name = "ps"
    static let spec = CommandSpec(
        name: name, usage: "icebox ps [-a] [-q | -j | --format TEMPLATE] [NAME...]",
        summary: "list the apps: state, time in state, pid, backend, memory, freeze/thaw latency, status",
        options: [
            OptionSpec(name: "all", value: nil, help: "include ended apps with their exit status or eviction", short: "a"),
            OptionSpec(name: "quiet", value: nil, help: "only the names, one a line", short: "q"),
            OptionSpec(name: "json", value: nil, help: "one JSON array (durations in integer nanoseconds)", short: "j"),
            OptionSpec(
                name: "format", value: "TEMPLATE",
                help: "one line per app from a template: '{{.Name}}\\t{{.State}}'; 'table ...' adds a header"),
            OptionSpec(name: "no-autostart", value: nil, help: "never start a daemon (to re-adopt apps a stopped one left)"),
            OptionSpec(name: "cgroup-root", value: "PATH", help: "cgroup root for a daemon this starts"),
        ],
        details: """
            NAME may be a glob ('web*'). A named app is shown even if it has ended; a NAME that
            matches no app is an error (exit 1). --format fields: .Name .PID .State .Since
            .Backend .Memory .MemoryBytes .LastFreeze .LastThaw .Status .Command .Priority
            .ExitStatus .Cgroup .User .PIDNamespace, and {{json .}}; '\\t' is a tab.
            """)

    /// What `ps` prints without --format (and with --format table).
    static let defaultTable =
        "table "
        + ([.name, .pid, .state, .since, .backend, .memory, .lastFreeze, .lastThaw, .status] as [PsField]).map { "{{.\($0.rawValue)}}" }
        .joined(separator: "\\t")

    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        let modes = ["json", "quiet"].filter { args.flag($0) } + (args.value("format") == nil ? [] : ["format"])
        if modes.count > 1 { throw ArgumentParser.usage("--\(modes[0]) and --\(modes[1]) cannot be combined: give one output form", spec) }
        let source = args.value("format") ?? "table"
        let template = try FormatTemplate<PsField>.parse(source == "table" ? defaultTable : source)
        let patterns = args.positionals
        // ps starts a daemon only when the registry says apps were left running (a daemon crash,
        // --stop): it re-adopts them, so ps shows their true state; else the registry says all.
        let env = ProcessEnvironment.value
        let all = args.flag("all") || !patterns.isEmpty
        // Whole records only where they are printed (--json, {{json .}}); a table or names
        // need the summaries, a fraction of the bytes to encode and decode.
        let whole = args.flag("json") || template.usesJSON
        var records: [AppRecord] = []
        var summaries: [AppSummary] = []
        let request = ControlRequest.ps(all: all, brief: !whole)
        // `ps --json` of every app prints the daemon's array as it came (see DaemonConnection.rawApps).
        var rawJSON: String?
        let passThrough: ((String) -> Void)? = args.flag("json") && patterns.isEmpty ? { rawJSON = $0 } : nil
        func take(_ client: inout DaemonClient) throws(IceboxError) -> Int32 {
            try client.perform(request, onData: { records = $0 }, onSummaries: { summaries = $0 }, rawApps: passThrough)
        }
        var client = DaemonClient(environment: env, autostartFlagOff: true, cgroupRoot: args.value("cgroup-root"))
        var code: Int32 = 0
        do { code = try take(&client) } catch  where error.code == .unavailable {
            let saved = Registry.load(directory: client.paths.registryDir)
            if saved.contains(where: { !$0.state.isEnded }) && !args.flag("no-autostart") {
                var starting = DaemonClient(environment: env, autostartFlagOff: false, cgroupRoot: args.value("cgroup-root"))
                code = try take(&starting)
            } else if all {
                records = saved
            }
        }
        if code != 0 { return code }
        if summaries.isEmpty { summaries = records.map(\.summary) }
        var unmatched: [String] = []
        if !patterns.isEmpty {
            let matches = { (name: String) in patterns.contains { fnmatch($0, name, 0) == 0 } }
            unmatched = patterns.filter { p in !summaries.contains { fnmatch(p, $0.name, 0) == 0 } }
            records = records.filter { matches($0.name) }
            summaries = summaries.filter { matches($0.name) }
        }
        defer { for p in unmatched { Output.err("icebox: no app named '\(p)'") } }
        let status: Int32 = unmatched.isEmpty ? 0 : 1
        if args.flag("json") {
            Output.out(rawJSON ?? JSONLines.encode(records))
            return status
        }
        if args.flag("quiet") {
            for r in summaries { Output.out(r.name) }
            return status
        }
        let now = Clock.monotonicNanos(), wall = Clock.wallNanos()
        let lines = summaries.indices.map { i in
            template.render({ $0.text(of: summaries[i], now: now, wall: wall) }, json: { JSONLines.encode(records[i]) })
        }
        if !template.table {
            for line in lines { Output.out(line) }
            return status
        }
        // A table: tab-separated cells aligned, the STATE column coloured. Split by bytes (a tab
        // is one): split by Character, 1000 lines took a tenth of the client's time.
        let rows = ([template.header] + lines).map { line in
            line.utf8.split(separator: UInt8(ascii: "\t"), omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        }
        let stateColumn = rows[0].firstIndex(of: "STATE")
        let table = Output.table(
            rows,
            style: { row, column in
                guard row > 0, column == stateColumn else { return nil }
                let r = summaries[row - 1]
                return Style.of(r.state, exitStatus: r.exitStatus)
            }, color: Output.colorOut)
        // One write for the whole table (1000 apps: one system call, not 1001), still whole lines.
        Output.out(table)
        return status
    }
}

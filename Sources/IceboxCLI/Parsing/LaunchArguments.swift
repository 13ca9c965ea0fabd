import Glibc
import IceboxCore
import IceboxSystem

/// The options run and launch share, and how they become LaunchOptions.
enum LaunchArguments {
    static let options: [OptionSpec] = [
        OptionSpec(
            name: "backend", value: "auto|cgroup2|cgroup1|signal", help: "how to freeze (default auto: cgroup2, else cgroup1, else signal)"),
        OptionSpec(name: "grace", value: "DUR", help: "time the app gets after its background notice (default 5s)"),
        OptionSpec(name: "max-grace", value: "DUR", help: "cap for EXTEND_TIMEOUT_USEC extensions (default 30s)"),
        OptionSpec(name: "background-signal", value: "SIG|auto|none", help: "the notice (default auto: SIGUSR1 if the app handles it)"),
        OptionSpec(name: "foreground-signal", value: "SIG|none", help: "sent after a thaw (default none)"),
        OptionSpec(name: "ready", value: "exec|notify|tcp:PORT|http:URL|cmd:PROBE", help: "when the app counts as launched (default exec)"),
        OptionSpec(name: "ready-timeout", value: "DUR", help: "give up (and terminate the app) after this (default 30s)"),
        OptionSpec(name: "cwd", value: "DIR", help: "working directory of the app (default: the current one)"),
        OptionSpec(name: "env", value: "KEY=VALUE", help: "set an environment variable for the app (repeatable)", repeatable: true),
        OptionSpec(name: "priority", value: "low|normal|high|critical", help: "eviction band (default normal; critical is never evicted)"),
        OptionSpec(name: "compact-after", value: "DUR", help: "compact this app that long after each freeze"),
        OptionSpec(name: "watchdog", value: "DUR", help: "an active app must send WATCHDOG=1 this often (paused while suspended)"),
        OptionSpec(name: "watchdog-action", value: "log|kill|restart", help: "what a missed WATCHDOG=1 does (default log)"),
        OptionSpec(
            name: "start-limit-burst", value: "N", help: "restart launches the app again at most N times within the interval (default 5)"),
        OptionSpec(name: "start-limit-interval", value: "DUR", help: "the interval of --start-limit-burst (default 10s; 0: no limit)"),
        OptionSpec(
            name: "user", value: "USER[:GROUP]",
            help: "run the app as this user and group (names or ids), with no capabilities and no_new_privs"),
        OptionSpec(
            name: "pid-namespace", value: nil,
            help: "run the app under a tiny init in a PID namespace of its own (needs a root daemon; for CRIU)"),
        OptionSpec(
            name: "evict-to", value: "kill|disk",
            help: "what the memory policy does to this app as its victim, over the policy's --evict-to (disk needs --pid-namespace)"),
        OptionSpec(name: "cgroup-root", value: "PATH", help: "cgroup v2 directory for the apps' cgroups (for a daemon this starts)"),
        OptionSpec(name: "no-autostart", value: nil, help: "fail (exit 69) rather than start a daemon"),
    ]

    static func signal(_ text: String, option: String, allowAuto: Bool) throws(IceboxError) -> NoticeSignal {
        if text == "none" { return NoticeSignal.none }
        if allowAuto && text == "auto" { return .auto }
        guard let n = Signals.number(of: text) else {
            throw IceboxError(
                .usage, "unknown signal '\(text)' for --\(option)",
                hint: "use a name like USR1 or SIGTERM, a number, RTMIN+N" + (allowAuto ? ", auto or none" : " or none"))
        }
        if n == SIGKILL || n == SIGSTOP {
            throw IceboxError(.usage, "--\(option) cannot be \(Signals.name(of: n)): an app cannot handle it")
        }
        return .signal(n)
    }

    static func build(name: String, nameIsDefault: Bool, command: [String], _ args: ParsedArguments, attached: Bool)
        throws(IceboxError) -> LaunchOptions
    {
        if command.isEmpty { throw IceboxError(.usage, "no command given", hint: "put the command after --, e.g. icebox run -- sleep 60") }
        try AppName.validateForLaunch(name)
        var o = LaunchOptions(name: name, command: command)
        o.nameIsDefault = nameIsDefault
        o.attached = attached
        if let b = args.value("backend") {
            guard let choice = BackendChoice(rawValue: b) else {
                throw IceboxError(.usage, "unknown backend '\(b)'", hint: "use auto, cgroup2, cgroup1 or signal")
            }
            o.backend = choice
        }
        o.graceNanos = try args.duration("grace") ?? o.graceNanos
        o.maxGraceNanos = try args.duration("max-grace") ?? max(o.maxGraceNanos, o.graceNanos)
        if o.maxGraceNanos < o.graceNanos {
            throw IceboxError(
                .usage,
                "--max-grace (\(DurationText.format(o.maxGraceNanos))) is shorter than --grace (\(DurationText.format(o.graceNanos)))")
        }
        if let s = args.value("background-signal") { o.backgroundSignal = try signal(s, option: "background-signal", allowAuto: true) }
        if let s = args.value("foreground-signal") {
            if case .signal(let n) = try signal(s, option: "foreground-signal", allowAuto: false) { o.foregroundSignal = n }
        }
        if let r = args.value("ready") {
            guard let mode = ReadyMode.parse(r) else {
                let why = ReadyMode.parseProblem(r).map { ": \($0)" } ?? ""
                throw IceboxError(
                    .usage, "invalid --ready '\(r)'\(why)",
                    hint: "use exec, notify, tcp:PORT, http:http://127.0.0.1:PORT/ or cmd:'PROBE'")
            }
            o.ready = mode
        }
        o.readyTimeoutNanos = try args.duration("ready-timeout") ?? o.readyTimeoutNanos
        o.workingDirectory = args.value("cwd") ?? ProcessEnvironment.workingDirectory
        if let cwd = args.value("cwd"), !FileIO.isDirectory(cwd) { throw IceboxError(.usage, "--cwd \(cwd): no such directory") }
        if let e = args.all("env").first(where: { $0.firstIndex(of: "=") == nil || $0.first == "=" }) {
            throw IceboxError(.usage, "invalid --env '\(e)'", hint: "write it as KEY=VALUE")
        }
        if let band: PriorityBand = try args.choice("priority", hint: "use low, normal, high or critical") { o.priority = band }
        if let c = try args.duration("compact-after") { o.compactAfterNanos = c }
        if let nanos = try args.duration("watchdog") {
            guard nanos >= LaunchOptions.leastWatchdogNanos else {
                throw IceboxError(
                    .usage, "--watchdog must be at least \(DurationText.format(LaunchOptions.leastWatchdogNanos))",
                    hint: "give a duration like 5s")
            }
            o.watchdogNanos = nanos
        }
        if let action: WatchdogAction = try args.choice("watchdog-action", hint: "use log, kill or restart") {
            guard o.watchdogNanos != nil else { throw IceboxError(.usage, "--watchdog-action needs --watchdog DUR") }
            o.watchdogAction = action
        }
        if let b = args.value("start-limit-burst") {
            guard let n = Int(b), n >= 1, n <= LaunchOptions.maxStartLimitBurst else {
                throw IceboxError(
                    .usage, "invalid --start-limit-burst '\(b)'", hint: "give a count from 1 to \(LaunchOptions.maxStartLimitBurst)")
            }
            o.startLimitBurst = n
        }
        if let i = try args.duration("start-limit-interval") { o.startLimitIntervalNanos = i }
        if (o.startLimitBurst != nil || o.startLimitIntervalNanos != nil) && o.watchdogAction != .restart {
            throw IceboxError(.usage, "--start-limit-burst and --start-limit-interval need --watchdog-action restart")
        }
        if let user = args.value("user") { o.runAs = try RunAs.resolve(user) }
        o.pidNamespace = args.flag("pid-namespace")
        if let target: EvictionTarget = try args.choice("evict-to", hint: "use kill or disk (checkpoint with CRIU)") {
            if target == .disk && !o.pidNamespace {
                throw IceboxError(.usage, "--evict-to disk needs --pid-namespace", hint: "a checkpoint's pids must be free at its restore")
            }
            o.evictTo = target
        }
        o.environment = ProcessEnvironment.current.filter { !$0.hasPrefix("ICEBOX_READY_FD=") }
        o.extraEnvironment = args.all("env")
        return o
    }

    static func client(_ args: ParsedArguments, readsLineEvents: Bool = false) -> DaemonClient {
        DaemonClient(
            environment: ProcessEnvironment.value, autostartFlagOff: args.flag("no-autostart"),
            cgroupRoot: args.value("cgroup-root"), readsLineEvents: readsLineEvents)
    }
}

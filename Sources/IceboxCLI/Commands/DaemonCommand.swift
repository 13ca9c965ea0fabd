import Glibc
import IceboxCore
import IceboxSystem

/// icebox daemon: the supervisor, normally started on demand.
enum DaemonCommand: IceboxCommand {
    static let name = "daemon"
    static let spec = CommandSpec(
        name: name, usage: "icebox daemon [--foreground] [--stop [--terminate-apps]] [--cgroup-root PATH]",
        summary: "run the supervisor (normally started on demand; exits when it has no apps)",
        options: [
            OptionSpec(name: "foreground", value: nil, help: "stay in the foreground (logs to stderr)"),
            OptionSpec(name: "stop", value: nil, help: "stop the running daemon; apps stay as they are, for the next daemon"),
            OptionSpec(name: "terminate-apps", value: nil, help: "with --stop: first terminate every app gracefully"),
            OptionSpec(name: "cgroup-root", value: "PATH", help: "cgroup v2 directory for the apps' cgroups (or ICEBOX_CGROUP_ROOT)"),
            MetricsFileOption.option,
        ] + LogRotationOptions.options + PolicyOptions.options,
        details: """
            The policy settings apply on top of the last policy (kept in the state directory); change them later with icebox policy set.
            With --foreground, a daemon already running for the runtime directory is an error (exit 1).
            """,
        operands: .nothing)

    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        let env = ProcessEnvironment.dictionary
        if args.flag("stop") {
            var client = DaemonClient(environment: { env[$0] }, autostartFlagOff: true, cgroupRoot: nil)
            let request = ControlRequest.stop(terminateApps: args.flag("terminate-apps"), timeoutNanos: nil)
            do { return try client.perform(request) } catch  where error.code == .unavailable {
                Output.out("no icebox daemon is running for \(client.paths.runtimeDir)")
                return 0
            }
        }
        let cgroupRoot = args.value("cgroup-root") ?? env["ICEBOX_CGROUP_ROOT"].flatMap { $0.isEmpty ? nil : $0 }
        let settings = try PolicyOptions.settings(args).map(\.setting)
        let metricsFile = try MetricsFileOption.path(args, environment: env)
        let logRotation = try LogRotationOptions.rotation(args, environment: env)
        // Checked here too, so that `icebox daemon` says at once what a started daemon would.
        let without = try SpeedMechanism.parseWithout(env[SpeedMechanism.environmentVariable] ?? "")
        if !args.flag("foreground") {
            var client = DaemonClient(environment: { env[$0] }, autostartFlagOff: false, cgroupRoot: cgroupRoot)
            // Someone else's daemon (or a link where the socket should be) is an error, not "running".
            var probe = DaemonClient(environment: { env[$0] }, autostartFlagOff: true, cgroupRoot: cgroupRoot)
            let running: Bool
            do { _ = try probe.session.connect(); running = true } catch  where error.code == .unavailable { running = false }
            if running {
                Output.out("an icebox daemon is already running for \(client.paths.runtimeDir)")
                // It keeps the metrics file and log settings it was started with.
                for name in ["metrics-file", "log-max-size", "log-keep"] {
                    guard let given = args.value(name) else { continue }
                    Output.err(
                        "icebox: --\(name) \(given) not applied: it is for a daemon this command starts (stop the running one first)")
                }
                if settings.isEmpty { return 0 }
                // Its policy changes as icebox policy set would change it.
                return try client.perform(.setPolicy(settings: settings))
            }
            // The daemon started below reads the policy from the state directory.
            try client.paths.prepare()
            try savePolicy(settings, in: client.paths)
            MetricsFileOption.pass(metricsFile)
            LogRotationOptions.pass(args)
            try client.session.startDaemon()
            Output.out("icebox daemon started for \(client.paths.runtimeDir) (log: \(client.paths.daemonLog))")
            return 0
        }
        // Before anything else runs (capabilities are per thread: no other thread exists yet).
        do { _ = try DaemonCapabilities.dropUnused(without: without) } catch {
            throw IceboxError("drop the daemon's unused capabilities", error)
        }
        var config = Daemon.Configuration(paths: IceboxPaths.fromEnvironment(env), cgroupRootOverride: cgroupRoot)
        try config.paths.prepare()
        try savePolicy(settings, in: config.paths)
        config.metricsFile = metricsFile
        config.logRotation = logRotation
        config.without = without
        config.listenerFD = try SocketActivation.controlSocket(environment: env)
        config.serviceNotifier = ServiceNotifier(environment: env)
        unsetenv("NOTIFY_SOCKET")
        if let text = env["ICEBOX_READY_FD"], let fd = Int32(text) {
            config.readyFD = fd
            unsetenv("ICEBOX_READY_FD")
        }
        let daemon = try Daemon(config: config)
        if try !daemon.run() {
            // Asked to be the daemon and could not be: a failure, not the no-op of a plain
            // `icebox daemon` that finds one running.
            Output.err("icebox: another daemon already serves \(config.paths.runtimeDir); this one did not start")
            return ExitCode.failure.rawValue
        }
        return 0
    }

    /// Applies the settings on top of the last policy (policy.json), which the daemon loads.
    static func savePolicy(_ settings: [PolicySetting], in paths: IceboxPaths) throws(IceboxError) {
        if settings.isEmpty { return }
        var policy = EvictionPolicy.load(from: paths.policyFile)
        for s in settings { policy.apply(s) }
        do { try FileIO.writeAtomically(paths.policyFile, JSONLines.encode(policy)) } catch { throw IceboxError("save the policy", error) }
    }
}

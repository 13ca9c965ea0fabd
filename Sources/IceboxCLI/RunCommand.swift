import Glibc
import IceboxCore
import IceboxSystem

/// icebox run -- CMD: launch an app attached to this terminal and exit with its status.
enum RunCommand: IceboxCommand {
    static let spec = CommandSpec(
        name: "run", usage: "icebox run [OPTIONS] [--] CMD [ARG...]",
        summary: "launch CMD as an app attached to this terminal; exit with its status",
        options: [
            OptionSpec(name: "name", value: "NAME", help: "the app's name (default: the command's base name, made unique)"),
            OptionSpec(name: "log", value: "FILE", help: "append icebox's event log here instead of stderr"),
        ] + LaunchArguments.options,
        commandAfterPositionals: 0,
        details: """
            The app uses this terminal's stdin, stdout and stderr. Ctrl-C, SIGTERM or SIGHUP
            terminates it the graceful way (a second one evicts it). Meanwhile other terminals
            control it by name.
            """)

    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        let command = args.command + args.positionals
        guard let program = command.first else { throw ArgumentParser.usage("run needs a command", spec) }
        let name = args.value("name") ?? AppName.derived(fromCommand: program)
        let options = try LaunchArguments.build(
            name: name, nameIsDefault: args.value("name") == nil,
            command: command, args, attached: true)
        var logFD: Int32 = 2
        if let path = args.value("log") {
            logFD = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            if logFD < 0 { throw IceboxError("open --log", SystemError("open", path: path)) }
        }
        // Our own signals arrive through a signalfd, so Ctrl-C becomes a graceful terminate.
        Signals.block([SIGINT, SIGTERM, SIGHUP, SIGPIPE])
        let sigFD: Int32
        do { sigFD = try Signals.signalFD([SIGINT, SIGTERM, SIGHUP]) } catch { throw IceboxError("set up signals", error) }

        var client = LaunchArguments.client(args)
        let connection = try client.connect()
        let request = ControlRequest.launch(options)
        try connection.send(request, fds: [0, 1, 2])

        var appName: String?
        var interrupts = 0
        while true {
            // No deadline here: the wait is for the attached app, which may run for as long as
            // it likes; Ctrl-C (the signalfd) and the daemon going away (end of file) end it.
            if !connection.hasBufferedLine {
                var pfds = [
                    pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0), pollfd(fd: sigFD, events: Int16(POLLIN), revents: 0),
                ]
                if let daemon = client.startedDaemon { pfds.append(pollfd(fd: daemon.pidfd, events: Int16(POLLIN), revents: 0)) }
                _ = poll(&pfds, nfds_t(pfds.count), -1)
                if pfds.count > 2 && pfds[2].revents != 0 {
                    _ = try? client.startedDaemon?.reapIfExited()  // no zombie if the daemon ends first
                    client.startedDaemon = nil
                }
                if pfds[1].revents != 0 {
                    for sig in Signals.drain(signalFD: sigFD) {
                        interrupts += 1
                        guard let appName else { continue }
                        let action: ControlRequest =
                            interrupts == 1 ? .terminate(names: [appName], timeoutNanos: nil) : .evict(names: [appName])
                        writeLine(
                            logFD, "icebox: \(Signals.name(of: sig)): \(interrupts == 1 ? "terminating" : "evicting") \(appName)")
                        var other = client
                        if let control = try? other.connect() { try? control.send(action) }
                    }
                }
                if pfds[0].revents == 0 { continue }
                if try !connection.readAvailable() {
                    throw IceboxError(.failure, "lost the connection to the icebox daemon", hint: "see \(client.paths.daemonLog)")
                }
            }
            while let reply = connection.bufferedReply() {
                switch reply.kind {
                case .line: if appName == nil { appName = reply.text } else if let t = reply.text { writeLine(logFD, t) }
                case .warning: if let t = reply.text { Output.err(t) }
                case .event: if let e = reply.event { writeLine(logFD, e.humanLine) }
                case .data: break
                case .done: return reply.code ?? 1
                case .exit: return reply.code ?? 1
                }
            }
        }
    }

    static func writeLine(_ fd: Int32, _ text: String) {
        let line = text + "\n"
        _ = line.withCString { write(fd, $0, strlen($0)) }
    }
}

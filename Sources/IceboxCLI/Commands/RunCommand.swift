import Glibc
import IceboxCore
import IceboxSystem

/// icebox run -- CMD: launch an app attached to this terminal and exit with its status.
enum RunCommand: IceboxCommand {
    static let name = "run"
    static let spec = CommandSpec(
        name: name, usage: "icebox run [OPTIONS] [--] CMD [ARG...]",
        summary: "launch CMD as an app attached to this terminal; exit with its status",
        options: [
            OptionSpec(name: "name", value: "NAME", help: "the app's name (default: the command's base name, made unique)"),
            OptionSpec(name: "log", value: "FILE", help: "append icebox's event log here instead of stderr"),
        ] + LaunchArguments.options,
        commandAfterPositionals: 0,
        details: """
            The app uses this terminal's stdin, stdout and stderr. Ctrl-C, SIGTERM or SIGHUP
            terminates it the graceful way (a second one evicts it). Ctrl-Z suspends it (notice,
            grace, freeze) and then stops icebox run; fg or bg resumes it. Meanwhile other
            terminals control it by name.
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
            // Never through a link at the file itself (links in its directory are followed):
            // root running `icebox run --log` in a directory others can write would otherwise
            // append to whatever file someone linked there.
            logFD = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0o644)
            if logFD < 0 {
                let error = SystemError("open", path: path)
                if error.errno == ELOOP {
                    throw IceboxError(
                        .permission, "--log \(path): it is a symbolic link; icebox does not write through one",
                        hint: "give the file it points to, or another path")
                }
                throw IceboxError("open --log", error)
            }
        }
        let color = logFD == 2 && Output.colorErr
        // Our own signals arrive through a signalfd: Ctrl-C becomes a graceful terminate, and
        // Ctrl-Z a suspend of the app before icebox run itself stops.
        Signals.block([SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGTSTP])
        let sigFD: Int32
        do { sigFD = try Signals.signalFD([SIGINT, SIGTERM, SIGHUP, SIGTSTP]) } catch { throw IceboxError("set up signals", error) }

        var client = LaunchArguments.client(args)
        var connection = try client.session.connect()
        let request = ControlRequest.launch(options: options)
        // Reset before a word of answer, the request was never read (DaemonConnection.
        // resetUnanswered): it goes once more to the next daemon, at the send or the first
        // read, within the client's reach deadline (ClientSession.mayResend).
        func sendAgainIfUnread() throws(IceboxError) -> Bool {
            guard client.session.mayResend(request, after: connection) else { return false }
            connection = try client.session.connect()
            try connection.send(request, fds: [0, 1, 2])
            return true
        }
        do { try connection.send(request, fds: [0, 1, 2]) } catch {
            guard try sendAgainIfUnread() else { throw error }
        }

        var appName: String?
        var interrupts = 0
        /// Prints the buffered replies; the exit code once the app has ended.
        func handleBuffered() -> Int32? {
            while let reply = connection.bufferedReply() {
                switch reply.kind {
                case .line:
                    if appName == nil {
                        appName = reply.text
                    } else if let t = reply.text {
                        writeLine(logFD, TerminalText.escaped(t, keepingLayout: true))
                    }
                case .warning: if let t = reply.text { Output.err(TerminalText.escaped(t, keepingLayout: true)) }
                case .event: if let e = reply.event { writeLine(logFD, EventText.line(e, color: color)) }
                case .data: break
                case .done, .exit: return reply.code ?? 1
                }
            }
            return nil
        }
        while true {
            // No deadline here: the wait is for the attached app, which may run for as long as
            // it likes; Ctrl-C (the signalfd) and the daemon going away (end of file) end it.
            if !connection.hasBufferedLine {
                var pfds = [
                    pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0), pollfd(fd: sigFD, events: Int16(POLLIN), revents: 0),
                ]
                if let daemon = client.session.startedDaemon { pfds.append(pollfd(fd: daemon.pidfd, events: Int16(POLLIN), revents: 0)) }
                do { _ = try Poll.wait(&pfds, until: nil) } catch { throw IceboxError("run: wait", error) }
                if pfds.count > 2 && pfds[2].revents != 0 {
                    _ = try? client.session.startedDaemon?.reapIfExited()  // no zombie if the daemon ends first
                    client.session.startedDaemon = nil
                }
                if pfds[1].revents != 0 {
                    for sig in Signals.drain(signalFD: sigFD) {
                        if sig == SIGTSTP {
                            if let code = try jobControlStop(
                                app: appName, client: client, logFD: logFD, connection: connection, handle: handleBuffered)
                            {
                                return code
                            }
                            continue
                        }
                        interrupts += 1
                        guard let appName else { continue }
                        let action: ControlRequest =
                            interrupts == 1 ? .terminate(names: [appName], timeoutNanos: nil) : .evict(names: [appName])
                        writeLine(logFD, "icebox: \(Signals.name(of: sig)): \(interrupts == 1 ? "terminating" : "evicting") \(appName)")
                        var other = client
                        if let control = try? other.session.connect() { try? control.send(action) }
                    }
                }
                if pfds[0].revents == 0 { continue }
                if try !connection.readAvailable() {
                    if try sendAgainIfUnread() { continue }
                    // No request re-attaches a terminal to a running app: the next daemon adopts
                    // the app as a detached one, and this command can only say so.
                    guard let appName else {
                        throw IceboxError(.failure, "lost the connection to the icebox daemon", hint: "see \(client.paths.daemonLog)")
                    }
                    throw IceboxError(
                        .failure,
                        "lost the connection to the icebox daemon (it ended or was killed): \(appName) is left running, detached from this terminal; the next daemon adopts it",
                        hint: "icebox ps shows it, icebox terminate \(appName) ends it; see \(client.paths.daemonLog)")
                }
            }
            if let code = handleBuffered() { return code }
        }
    }

    /// Ctrl-Z: suspend the app through its lifecycle (notice, grace, freeze), print what
    /// happened, stop this process so the shell gets its job back, and once the shell
    /// continues it (fg, bg: SIGCONT) resume the app. The shell's job table and `icebox ps`
    /// then agree. Returns the exit code if the app ended meanwhile.
    static func jobControlStop(
        app: String?, client: DaemonClient, logFD: Int32, connection: DaemonConnection, handle: () -> Int32?
    ) throws(IceboxError) -> Int32? {
        if let app {
            writeLine(logFD, "icebox: SIGTSTP: suspending \(app)")
            let (code, lines) = oneRequest(client, .suspend(names: [app]))
            if code != 0 { writeLine(logFD, "icebox: could not suspend \(app): \(lines.joined(separator: "; "))") }
            // Print the events of the suspend the daemon has sent on our connection, before stopping.
            while Poll.ready(connection.fd, Int16(POLLIN)) {
                if try !connection.readAvailable() {
                    throw IceboxError(.failure, "lost the connection to the icebox daemon", hint: "see \(client.paths.daemonLog)")
                }
                if let code = handle() { return code }
            }
        }
        stopThisProcess()
        if let app {
            writeLine(logFD, "icebox: SIGCONT: resuming \(app)")
            let (code, lines) = oneRequest(client, .resume(names: [app], waitReady: false))
            if code != 0 { writeLine(logFD, "icebox: could not resume \(app): \(lines.joined(separator: "; "))") }
        }
        return nil
    }

    /// Stops this process until a SIGCONT. With SIGTSTP where it works, so the shell says
    /// "Stopped" as for any job; the kernel discards a SIGTSTP to an orphaned process group
    /// (no shell could continue it), and there SIGSTOP is the only way to stop.
    static func stopThisProcess() {
        if processGroupIsOrphaned() {
            raise(SIGSTOP)
            return
        }
        signal(SIGTSTP, SIG_DFL)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGTSTP)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        raise(SIGTSTP)  // stops here until SIGCONT
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// POSIX's definition: a group is orphaned when no member has a parent in another group
    /// of the same session.
    static func processGroupIsOrphaned() -> Bool {
        let group = getpgrp(), session = getsid(0)
        let pids = ((try? FileIO.list("/proc")) ?? []).compactMap { pid_t($0) }
        for pid in pids {
            guard let member = ProcFS.stat(pid: pid), member.pgrp == group, let parent = ProcFS.stat(pid: member.ppid) else { continue }
            if parent.pgrp != group && parent.session == session { return false }
        }
        return true
    }

    /// Sends one request on a connection of its own and waits for the answer: the exit code
    /// and the lines it printed.
    static func oneRequest(_ client: DaemonClient, _ request: ControlRequest) -> (code: Int32, lines: [String]) {
        var other = client
        let connection: DaemonConnection
        do { connection = try other.session.connect() } catch { return (error.code.rawValue, [error.message]) }
        do { try connection.send(request) } catch { return (error.code.rawValue, [error.message]) }
        var lines: [String] = []
        // A suspend waits out the app's grace (and a resume its thaw): bounded by the grace cap
        // and the freeze deadline, with room to spare.
        let deadline = Clock.monotonicNanos().saturatingAdd(120_000_000_000)
        while let reply = try? connection.next(until: deadline, what: request.commandName) {
            switch reply.kind {
            case .line, .warning: if let t = reply.text { lines.append(t.replacingPrefix("icebox: ")) }
            case .done, .exit: return (reply.code ?? 1, lines)
            default: break
            }
        }
        return (ExitCode.failure.rawValue, lines + ["the icebox daemon closed the connection"])
    }

    static func writeLine(_ fd: Int32, _ text: String) { Output.writeAll(fd, text + "\n") }
}

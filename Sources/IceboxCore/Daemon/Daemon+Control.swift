import Glibc
import IceboxSystem

/// The control socket: accept, authenticate, read one JSON request, answer.
extension Daemon {
    /// The daemon's user, read once (it never changes its ids; its children do, after the clone).
    static let ownUID = getuid()

    /// Accepts one connection a turn: the level-triggered listener brings the loop back for
    /// the next, after what else is ready, and a lone client costs no accept4 hearing EAGAIN.
    func acceptClients() {
        guard let fd = UnixSocket.accept(listener) else {
            let e = errno
            if e == EMFILE || e == ENFILE { pauseAccepting(errno: e) }
            return
        }
        acceptGate.accepted()
        // Only our own user (or root) may control our apps.
        guard let peer = UnixSocket.peerCredentials(fd), peer.uid == Self.ownUID || peer.uid == 0 else {
            var reply = ControlReply(kind: .done, code: ExitCode.permission.rawValue)
            reply.text = "icebox: permission denied: this daemon belongs to uid \(Self.ownUID); run your own with ICEBOX_RUNTIME_DIR"
            // One non-blocking try: a refused client gets no buffer of ours.
            _ = try? UnixSocket.sendSome(fd, ArraySlice(Array((JSONLines.encode(reply) + "\n").utf8)))
            close(fd)
            return
        }
        do {
            try watch(fd, .client(fd), events: EpollEvents.readable | EpollEvents.readHangup)
            clients[fd] = ClientConnection(fd: fd)
        } catch {
            close(fd)
            return
        }
        // The request is usually here already: read now (non-blocking), it saves a turn.
        readClient(fd, events: 0)
    }

    /// Out of descriptors: the still-readable listener would spin the loop, so it is left alone
    /// until a client closes or a back-off; logged once.
    func pauseAccepting(errno e: Int32) {
        guard let first = acceptGate.shut(now: Clock.monotonicNanos()) else { return }
        unwatch(listener)
        guard first else { return }
        let why = e == EMFILE ? "this process's descriptor limit (EMFILE)" : "the system's descriptor limit (ENFILE)"
        // Appending to the log needs a descriptor of its own.
        acceptGate.releaseReserve()
        defer { acceptGate.holdReserve() }
        logDaemon("cannot accept control connections: out of descriptors, \(why); retrying as descriptors free up")
    }

    /// Watches the listener again after `pauseAccepting`.
    func resumeAccepting() {
        guard acceptGate.reopen() else { return }
        do { try watch(listener, .listener) } catch {
            acceptGate.retry(now: Clock.monotonicNanos())
            return
        }
        acceptClients()
    }

    /// The client's socket is ready: replies to send (EPOLLOUT), a request to read, or gone.
    func clientReady(_ fd: Int32, events: UInt32) {
        guard let client = clients[fd] else { return }
        if events & EpollEvents.writable != 0 { flushClient(fd) }
        guard clients[fd] != nil else { return }
        if client.closeAt != nil {
            // Finished: only its last replies matter; it went away or they are out.
            if events & (EpollEvents.hangup | EpollEvents.error) != 0 { closeClient(fd) }
            return
        }
        if events & (EpollEvents.readable | EpollEvents.hangup | EpollEvents.readHangup | EpollEvents.error) != 0 {
            readClient(fd, events: events)
        }
    }

    func readClient(_ fd: Int32, events: UInt32) {
        guard var client = clients[fd] else { return }
        var closed = false
        while true {
            do {
                guard let chunk = try UnixSocket.receiveStream(fd) else { break }
                client.fds.append(contentsOf: chunk.fds)
                if client.fds.count > ClientConnection.maxDescriptors { break }
                if chunk.bytes.isEmpty { closed = true; break }
                client.input.append(contentsOf: chunk.bytes)
                if client.inputOverflowed { break }
                // A whole request line is here: no read only to hear EAGAIN (level-triggered).
                if chunk.bytes.contains(UInt8(ascii: "\n")) { break }
            } catch {
                closed = true
                break
            }
        }
        clients[fd] = client
        if client.fds.count > ClientConnection.maxDescriptors {
            let n = client.fds.count
            cutOff(fd, "passed \(n) descriptors (at most \(ClientConnection.maxDescriptors) per connection); all closed")
            return
        }
        if client.inputOverflowed {
            clients[fd]?.input = []
            cutOff(fd, "sent a request line over \(ClientConnection.maxRequestBytes) bytes without a newline")
            return
        }
        if !client.busy, let line = clients[fd]?.nextLine() {
            clients[fd]?.busy = true
            let fds = clients[fd]?.fds ?? []
            clients[fd]?.fds = []
            handleRequest(line, client: fd, fds: fds)
        }
        if closed || events & (EpollEvents.hangup | EpollEvents.readHangup) != 0 {
            clientGone(fd, drain: false)
        }
    }

    /// A misbehaving client is dropped, with the reason logged; the daemon goes on.
    func cutOff(_ fd: Int32, _ why: String) {
        let peer = UnixSocket.peerCredentials(fd).map { "pid \($0.pid)" } ?? "a client"
        logDaemon("cut off \(peer) on the control socket: it \(why)")
        clientGone(fd, drain: false)
    }

    /// A client is done with: answered (`drain`: its last replies still go out, bounded), gone,
    /// or cut off. If it was `icebox run`, its app goes the graceful way.
    func clientGone(_ fd: Int32, drain: Bool) {
        guard var client = clients[fd], client.closeAt == nil else { return }
        clients.dropStopRequester(fd)
        for extra in client.fds { close(extra) }
        client.fds = []
        waiters.closeAll(of: fd)
        pendingLaunches.clientGone(fd)
        if let name = client.attachedApp, let app = apps[name], app.attachedClient == fd {
            app.attachedClient = nil
            if !app.lifecycle.isEnding {
                log(.detach, app: name, pid: app.pid, "the attached icebox run went away; terminating the app")
                apply(.terminate(waiter: nil, timeout: 10_000_000_000), to: app)
            }
        }
        client.attachedApp = nil
        if drain && client.pendingOutput > 0 {
            client.closeAt = Clock.monotonicNanos().saturatingAdd(ClientConnection.drainNanos)
        }
        clients[fd] = client
        // Nil on entry (the guard): set only by a drain that waits for its replies to go out.
        if client.closeAt == nil { closeClient(fd) }
    }

    func closeClient(_ fd: Int32) {
        guard var client = clients.remove(fd) else { return }
        // Replies queued this turn go out if the socket takes them now; nothing waits.
        if client.pendingOutput > 0 { _ = client.flush() }
        watches.forget(fd)
        close(fd)
        // A descriptor is free again: a listener paused on EMFILE may accept.
        resumeAccepting()
    }

    /// Queues a reply, sent at the end of this turn (`flushReplies`) with whatever else the turn
    /// has for the client (one wake-up, not three); the rest at EPOLLOUT. Never waits.
    func send(_ fd: Int32, _ reply: ControlReply) {
        guard var client = clients[fd], client.closeAt == nil else { return }
        guard client.queue(Array((JSONLines.encode(reply) + "\n").utf8)) else {
            return settleOutput(fd, .overflow)
        }
        clients[fd] = client
        clients.queued(fd)
    }

    /// Queues a reply of only a kind and its text (a `line`, a `warning`).
    func send(_ fd: Int32, _ kind: ControlReply.Kind, _ text: String) { send(fd, ControlReply(kind: kind, text: text)) }

    /// Sends what this turn of the loop queued for each client.
    func flushReplies() {
        for fd in clients.takeUnflushed() { flushClient(fd) }
    }

    func flushClient(_ fd: Int32) {
        guard var client = clients[fd] else { return }
        let outcome = client.flush()
        clients[fd] = client
        settleOutput(fd, outcome)
    }

    /// Watches for EPOLLOUT only while replies wait; closes a finished client once they are out.
    func settleOutput(_ fd: Int32, _ outcome: ClientConnection.Queued) {
        switch outcome {
        case .sent:
            if clients[fd]?.closeAt != nil { return closeClient(fd) }
            setClientEvents(fd, writable: false)
        case .pending:
            setClientEvents(fd, writable: true)
        case .overflow:
            cutOff(fd, "stopped reading its replies (over \(ClientConnection.maxPendingReplyBytes) bytes waiting)")
        case .failed:
            clientGone(fd, drain: false)
        }
    }

    func setClientEvents(_ fd: Int32, writable: Bool) {
        guard let token = watches.token(of: fd), var client = clients[fd], client.watchingWritable != writable else { return }
        var events = EpollEvents.readable | EpollEvents.readHangup
        if writable { events |= EpollEvents.writable }
        do { try watches.epoll.modify(fd, events: events, token: token) } catch {
            // Ours and registered, so only ENOMEM (or a bug): said, and the next call tries again.
            log(.error, app: "-", pid: getpid(), "client connection \(fd): \(error)")
            return
        }
        client.watchingWritable = writable
        clients[fd] = client
    }

    /// Ends a request: the final reply (after `data`, if given), then the connection closes (once the reply is out).
    func finish(_ fd: Int32, _ code: ExitCode, _ text: String? = nil, data: ControlReply? = nil, reason: IceboxError.Reason? = nil) {
        if let data { send(fd, data) }
        if let text { send(fd, ControlReply(kind: code == .success ? .line : .warning, text: text)) }
        var done = ControlReply(kind: .done, code: code.rawValue)
        if code != .success { done.reason = reason?.wire }
        send(fd, done)
        clientGone(fd, drain: true)
    }

    func fail(_ fd: Int32, _ error: IceboxError) {
        finish(fd, error.code, "icebox: " + error.description, reason: error.reason)
    }

    // MARK: Waiters: a client waiting for one or more apps to finish a transition

    /// Sends a line to a waiting client without ending its wait; a failure sets its exit code.
    /// A line reported while inputs are applied is held until they are done, and while one of
    /// the client's apps waits on the kernel: a client woken mid-freeze takes a CPU from the
    /// tasks that must run to freeze (10 busy processes froze in 0.29 ms against 0.59 ms).
    /// `event` travels with the line (docs/protocol.md): IceboxClient's typed results use it.
    func report(_ id: Int, line: String, failed: IceboxError.Reason? = nil, event: Event? = nil) {
        guard var waiter = waiters[id] else { return }
        var reply = ControlReply(kind: failed == nil ? .line : .warning, text: line)
        if failed == nil { reply.event = event }
        if inputs.isDraining || !waiter.held.isEmpty { waiter.held.append(reply) } else { send(waiter.client, reply) }
        if let failed { noteFailure(&waiter, failed) }
        waiters[id] = waiter
    }

    /// Sends the held lines of every waiter none of whose apps waits on the kernel.
    func releaseHeldLines() {
        for (id, waiter) in waiters.all where !waiter.held.isEmpty {
            let waiting = waiter.remaining.contains { name in apps[name]?.freeze.map { $0.aside == nil } ?? false }
            if !waiting { releaseHeldLines(of: id) }
        }
    }

    private func releaseHeldLines(of id: Int) {
        guard var waiter = waiters[id], !waiter.held.isEmpty else { return }
        for reply in waiter.held { send(waiter.client, reply) }
        waiter.held = []
        waiters[id] = waiter
    }

    /// Records why a waiter's request failed: the first reason stands, except that a specific
    /// one replaces a bare code of the same value (``failed(_:because:)``).
    func noteFailure(_ waiter: inout Waiter, _ reason: IceboxError.Reason) {
        switch waiter.failure {
        case nil: waiter.failure = reason
        case .other(let code) where code == reason.exitCode: waiter.failure = reason
        default: break
        }
    }

    /// Gives a waiter's failure its typed reason before the lifecycle settles it as failed.
    func failed(_ id: Int, because reason: IceboxError.Reason) {
        guard var waiter = waiters[id] else { return }
        noteFailure(&waiter, reason)
        waiters[id] = waiter
    }

    /// Reports one app's outcome to a waiting client; the reply ends when no app remains.
    func settle(_ id: Int, app: String, line: String?, failed: IceboxError.Reason? = nil, event: Event? = nil) {
        if let line { report(id, line: line, failed: failed, event: event) }
        guard var waiter = waiters[id] else { return }
        waiter.remaining.remove(app)
        waiters[id] = waiter
        if waiter.remaining.isEmpty {
            releaseHeldLines(of: id)
            waiters.close(id)
            finish(waiter.client, waiter.failure?.exitCode ?? .success, reason: waiter.failure)
        }
    }

    // MARK: Requests

    func handleRequest(_ line: String, client fd: Int32, fds: [Int32]) {
        // What this request reads or changes must be on disk, for a successor to find.
        flushRegistry()
        let request: ControlRequest
        do {
            request = try JSONLines.decodeOrError(ControlRequest.self, line)
        } catch {
            for extra in fds { close(extra) }
            fail(fd, ControlRequest.refusal(of: line, error))
            return
        }
        if case .launch = request {} else { for extra in fds { close(extra) } }
        switch request {
        case .ping:
            finish(fd, .success, "icebox daemon pid \(getpid())")
        case .version:
            var reply = ControlReply(kind: .data, text: "icebox control protocol \(ControlRequest.protocolVersion)")
            reply.protocolVersion = ControlRequest.protocolVersion
            finish(fd, .success, data: reply)
        case .launch(let options):
            launch(options, stdio: fds, client: fd)
        case .ps(let all, let brief):
            // A suspended app whose main process was moved out runs: ps must not say otherwise.
            for app in Array(apps.values) { noticeDeparture(app) }
            var reply = ControlReply(kind: .data)
            let readMemory = memoryReader()
            // Sorted as small rows, not as records, which are large (a quarter of `ps` with 1000
            // apps).
            var rows: [(wall: String, name: String, app: LiveApp?)] = apps.values.map { ($0.lifecycle.record.launchedWall, $0.name, $0) }
            // An app on disk is not ended: it shows without --all.
            rows += ended.values.filter { apps[$0.name] == nil && (all || $0.state == .onDisk) }.map { ($0.launchedWall, $0.name, nil) }
            rows.sort { $0.wall < $1.wall }
            if brief {
                reply.summaries = rows.compactMap { row in
                    guard let app = row.app else { return ended[row.name]?.summary }
                    var summary = app.lifecycle.record.summary
                    summary.memoryBytes = readMemory(app).bytes
                    return summary
                }
            } else {
                // The environment's names, never values: a token must not reach a terminal or log.
                reply.apps = rows.compactMap { row in
                    guard let app = row.app else { return ended[row.name]?.redacted }
                    var record = app.lifecycle.record.redacted
                    let memory = readMemory(app)
                    record.memoryBytes = memory.bytes
                    record.memorySource = memory.source.rawValue
                    return record
                }
            }
            finish(fd, .success, data: reply)
        case .stop(let terminateApps, let timeout):
            // The reply comes last, after every write: a caller may then remove the state
            // directory.
            clients.addStopRequester(fd)
            if terminateApps {
                if apps.isEmpty { send(fd, ControlReply(kind: .line, text: "daemon stopping (no apps)")) }
                stopAll(timeoutNanos: timeout ?? 10_000_000_000)
            } else {
                leaveAppsAndStop()
                let n = apps.count
                send(fd, .line, "daemon stopping; \(n) app\(n == 1 ? "" : "s") left as they are, for the next daemon to re-adopt")
            }
        case .metrics(let format):
            // One reply holding the whole text (the client prints it with a final newline).
            var text = metricsText(format)
            if text.hasSuffix("\n") { text.removeLast() }
            finish(fd, .success, text)
        case .policy:
            var reply = ControlReply(kind: .data)
            reply.policy = policyEngine.policy
            finish(fd, .success, data: reply)
        case .setPolicy(let settings):
            let old = policyEngine.policy
            for setting in settings { policyEngine.policy.apply(setting) }
            do throws(IceboxError) {
                try applyPolicy()
                // A policy that cannot be saved would be lost at the next start: not changed.
                do { try FileIO.writeAtomically(config.paths.policyFile, JSONLines.encode(policyEngine.policy)) } catch {
                    throw IceboxError("save the policy", error)
                }
            } catch {
                policyEngine.policy = old
                // The old policy was armed until now, so arming it again works.
                try? applyPolicy()
                return fail(fd, error)
            }
            log(.policy, app: "-", pid: getpid(), "policy changed: " + settings.map(\.summary).joined(separator: ", "))
            var reply = ControlReply(kind: .data)
            reply.policy = policyEngine.policy
            finish(fd, .success, data: reply)
            enforcePolicy()
        case .compact(let names, let requestedMode):
            guard !names.isEmpty else { return fail(fd, IceboxError(.usage, "compact needs at least one app name")) }
            compactRequested(names, mode: requestedMode ?? policyEngine.policy.compactMode, client: fd)
        case .relaunch(let name):
            // An ended app again, with its last command line and options (detached).
            if let live = apps[name] {
                return fail(
                    fd,
                    IceboxError(
                        .wrongState(name: name, state: live.record.state),
                        "\(name) is running (pid \(live.pid), \(live.record.state.rawValue))",
                        hint: "terminate or evict it first"))
            }
            if restores[name] != nil {
                return fail(fd, IceboxError(.tryAgain, "\(name) is being restored from disk", hint: "try again once it is active"))
            }
            if ended[name]?.state == .onDisk, let dir = ended[name]?.images {
                // Relaunched fresh: the checkpoint will never be restored.
                discardImages(CheckpointImages(directory: dir), of: name)
                send(fd, ControlReply(kind: .line, text: "\(name)  was on disk: its images are discarded, and it starts fresh"))
            }
            guard var options = ended[name]?.options else {
                return fail(
                    fd, IceboxError(.noSuchApp(name: name), "no ended app named '\(name)' to relaunch", hint: "icebox ps --all lists them"))
            }
            if ended[name]?.isAdopted == true {
                // icebox never started it: what it has is what /proc showed when it was adopted.
                send(
                    fd, .line,
                    "\(name)  was adopted, not launched: relaunching it with the command line, working directory and environment read from /proc/\(ended[name]?.pid ?? 0) at its adoption: \(options.command.joined(separator: " "))"
                )
            }
            options.attached = false
            options.nameIsDefault = false
            launch(options, stdio: [], client: fd)
        case .forget(let names):
            // Leaves no row in ps --all; the app's own saved state ($STATE_DIR/apps/NAME) stays.
            for name in names {
                guard let live = apps[name] else { continue }
                return fail(
                    fd,
                    IceboxError(
                        .wrongState(name: name, state: live.record.state), "\(name) is running", hint: "terminate or evict it first"))
            }
            for name in names where restores[name] != nil {
                return fail(fd, IceboxError(.tryAgain, "\(name) is being restored from disk", hint: "try again once it is active"))
            }
            for name in names {
                if ended[name]?.state == .onDisk, let dir = ended[name]?.images {
                    discardImages(CheckpointImages(directory: dir), of: name)
                }
                guard ended.removeValue(forKey: name) != nil else { continue }
                registryWriter.unmark(name)
                unlink(config.paths.registryRecord(name))
            }
            finish(fd, .success)
        case .suspend(let names, let grace):
            guard let targets = liveApps(names, for: request, client: fd) else { return }
            let id = waiters.open(client: fd, apps: names)
            for app in targets {
                // One thawed by someone else since is frozen again, not "already suspended".
                noticeOutsideThaw(app)
                apply(.suspend(waiter: id, notice: notice(for: app), grace: grace), to: app)
            }
        case .resume(let names, let waitReady):
            // An app on disk is restored; the others thawed.
            let fromDisk = names.filter(isOnDisk)
            guard let targets = liveApps(names.filter { !fromDisk.contains($0) }, for: request, client: fd, allowEmpty: !fromDisk.isEmpty)
            else { return }
            let id = waiters.open(client: fd, apps: names)
            for name in fromDisk { restoreRequested(name, waiter: id) }
            for app in targets {
                // One frozen by someone else since is thawed, not "already active".
                noticeOutsideFreeze(app)
                apply(.resume(waiter: id, waitReady: waitReady), to: app)
            }
        case .switchTo(let name):
            guard let target = liveApps([name], for: request, client: fd)?.first else { return }
            let previous = apps.values.filter { $0 !== target && ($0.record.state == .active || $0.record.state == .launching) }
            let id = waiters.open(client: fd, apps: [target.name] + previous.map(\.name))
            apply(.resume(waiter: id), to: target)
            for app in previous { apply(.suspend(waiter: id, notice: notice(for: app)), to: app) }
        case .terminate(let names, let timeout):
            guard let (fromDisk, targets) = appsToEnd(names, for: request, client: fd) else { return }
            let id = waiters.open(client: fd, apps: names)
            for name in fromDisk { endOnDisk(name, as: .terminated, waiter: id) }
            for app in targets { apply(.terminate(waiter: id, timeout: timeout ?? 10_000_000_000), to: app) }
        case .evict(let names, let toDisk):
            // Killed (an app on disk: its images discarded), or checkpointed to disk.
            guard let (fromDisk, targets) = appsToEnd(names, for: request, client: fd) else { return }
            let id = waiters.open(client: fd, apps: names)
            for name in fromDisk {
                if toDisk {
                    settle(id, app: name, line: LifecycleText.nothingToDo(name, already: .onDisk))
                } else {
                    endOnDisk(name, as: .evicted, waiter: id)
                }
            }
            for app in targets { apply(toDisk ? .evictToDisk(waiter: id) : .evict(waiter: id), to: app) }
        case .adopt(let options):
            do { finish(fd, .success, try adoptNow(options, client: fd)) } catch { fail(fd, error) }
        case .release(let name):
            releaseRequested(name, client: fd)
        }
    }

    /// The apps a terminate or evict names, on disk and live; nil (client answered) if one is not.
    func appsToEnd(_ names: [String], for request: ControlRequest, client fd: Int32) -> (onDisk: [String], live: [LiveApp])? {
        let fromDisk = names.filter(isOnDisk)
        if let busy = fromDisk.first(where: { restores[$0] != nil }) {
            fail(fd, IceboxError(.tryAgain, "\(busy) is being restored from disk", hint: "try again once it is active"))
            return nil
        }
        guard let live = liveApps(names.filter { !fromDisk.contains($0) }, for: request, client: fd, allowEmpty: !fromDisk.isEmpty)
        else { return nil }
        return (fromDisk, live)
    }

    /// The live apps a command names, all checked first; nil (client answered) if one is missing.
    func liveApps(_ names: [String], for request: ControlRequest, client fd: Int32, allowEmpty: Bool = false) -> [LiveApp]? {
        if names.isEmpty && allowEmpty { return [] }
        if names.isEmpty {
            fail(fd, IceboxError(.usage, "\(request.commandName) needs at least one app name"))
            return nil
        }
        for name in names where apps[name] == nil {
            let error: IceboxError
            if restores[name] != nil {
                error = IceboxError(
                    .busy(name: name, state: .onDisk), "\(name) is being restored from disk", hint: "try again once it is active")
            } else if let old = ended[name], old.state == .onDisk {
                error = IceboxError(
                    .wrongState(name: name, state: .onDisk), "\(name) is on disk (checkpointed)", hint: "icebox resume \(name) restores it")
            } else if let old = ended[name] {
                let why = old.ending.map { " (\($0))" } ?? ""
                error = IceboxError(
                    .wrongState(name: name, state: old.state),
                    "\(name) is not running: it \(old.state == .exited ? "exited" : "was \(old.state.rawValue)")\(why)",
                    hint: "start it again with icebox relaunch \(name)")
            } else {
                error = IceboxError(.noSuchApp(name: name), "no app named '\(name)'", hint: "icebox ps lists the apps")
            }
            fail(fd, error)
            return nil
        }
        let named = names.compactMap { apps[$0] }
        for app in named { noticeDeparture(app) }  // a resume of an app that runs again is a no-op
        return named
    }

    /// icebox compact: each named app, which must be suspended, compacted now.
    func compactRequested(_ names: [String], mode: CompactionMode, client fd: Int32) {
        var code = ExitCode.success
        for name in names {
            guard let app = apps[name] else {
                send(fd, ControlReply(kind: .warning, text: "icebox: no running app named '\(name)'"))
                code = .failure
                continue
            }
            guard app.record.state == .suspended else {
                // A launching app cannot be suspended yet (refused until it is ready).
                let then = app.record.state == .launching ? "once it is active" : "first"
                send(
                    fd, .warning,
                    "icebox: \(name) is \(app.record.state.rawValue): compact works on suspended apps (icebox suspend \(name) \(then))")
                code = .failure
                continue
            }
            switch compact(app, mode: mode) {
            case .success(let r):
                send(
                    fd, .line,
                    "\(name)  compacted (\(mode.rawValue), \(r.method.rawValue)) in \(DurationText.format(r.durationNanos)): \(r.summary); \(r.vmasAdvised) mappings, \(SizeText.format(r.bytesAdvised)) advised, \(r.rangesSkipped) ranges refused"
                )
                if mode == .pageout && !SystemMemory.hasSwap() {
                    send(fd, .line, "\(name)  this host has no swap: anonymous pages stay resident, file-backed pages go")
                }
            case .failure(let e):
                send(fd, ControlReply(kind: .warning, text: "icebox: \(e)"))
                code = e.code
            }
        }
        finish(fd, code)
    }
}

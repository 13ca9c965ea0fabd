import Glibc
import IceboxSystem

/// Taking over apps a previous daemon left on disk, or mid-checkpoint or mid-restore: its criu
/// runs on (one killed halfway could leave its parasite in the app), so this daemon waits for
/// it (bounded, at start), then finds the app in memory, on disk, or restored; never twice.
extension Daemon {
    /// A registry record on disk or with a disk intent: taken over here.
    func recoverDisk(_ saved: AppRecord) {
        waitForLeftCriu(saved)
        var record = saved
        let images = CheckpointImages.of(saved, stateDir: config.paths.stateDir)
        switch saved.diskIntent {
        case .checkpoint?:
            record.clearDiskWork()
            if isSameProcess(saved) {
                // The dump did not finish: the app is still in memory, and the images go.
                try? images.discard()  // partial: nothing reads them
                log(
                    .checkpoint, app: saved.name, pid: saved.pid,
                    "a checkpoint to disk was under way when the last daemon ended; the app is still in memory")
                return takeOver(record)
            }
            guard images.isComplete || images.dumpLogSaysDone else {
                try? images.discard()  // partial: nothing reads them
                return recordEndedWhileAway(record, ending: "ended during a checkpoint to disk that did not complete")
            }
            // criu finished after the daemon died: made durable and marked here.
            if !images.isComplete {
                if let sync = images.syncCommand() {
                    // Failed: the mark below still says what criu wrote.
                    _ = try? CriuCommand.run(sync.executable, sync.arguments, timeoutNanos: 60_000_000_000)
                }
                try? images.markComplete()  // failed: the next restore says the images are incomplete
            }
            restOnDisk(record, images, how: "checkpointed by a criu that finished after the last daemon ended")
        case .restore?:
            record.clearDiskWork()
            // No pid file: nothing was restored.
            if let pid = pid_t(((try? FileIO.read(images.restoredPIDFile)) ?? "").trimmed()), images.restoreLogSaysDone,
                let stat = ProcFS.stat(pid: pid), stat.state != "Z"
            {
                record.pid = pid
                record.startTicks = stat.startTimeTicks
                record.state = .active
                record.images = nil
                record.imageBytes = nil
                record.sinceMonotonicNanos = Clock.monotonicNanos()
                log(
                    Event(
                        app: saved.name, pid: pid, kind: .restore, from: .onDisk, to: .active,
                        detail: "restored by a criu that finished after the last daemon ended", at: .read()))
                try? images.discard()  // restored: never again
                return takeOver(record)
            }
            // Not restored: whatever it began is killed, and the images stay.
            _ = clearLeftovers(AppCgroups.adopt(v2: record.cgroup, freezerV1: record.freezerV1, memoryV1: record.memoryV1))
            try? FileIO.removeTree(images.restoredPIDFile)  // stale: a later restore writes its own
            restOnDisk(record, images, how: "a restore under way when the last daemon ended did not finish; still on disk")
        case nil:
            restOnDisk(record, images, how: nil)
        }
    }

    /// The app is on disk if its images are complete; else evicted, told to restore at its next
    /// launch.
    private func restOnDisk(_ saved: AppRecord, _ images: CheckpointImages, how: String?) {
        var record = saved
        if images.isComplete {
            record.state = .onDisk
            record.images = images.directory
            record.imageBytes = record.imageBytes ?? images.bytes()
        } else {
            record.state = .evicted
            record.killedWhileSuspended = true
            record.ending = "its images in \(images.directory) are gone or incomplete"
            try? images.discard()  // incomplete: nothing reads them
        }
        removeOwnNotifySocket(of: record)
        ended[record.name] = record
        saveRegistry(record.name)
        if let how {
            log(Event(app: record.name, pid: nil, kind: .checkpoint, from: saved.state, to: record.state, detail: how, at: .read()))
        }
    }

    /// Waits for the criu the record names, if it still runs, until its start plus
    /// `--criu-timeout`.
    private func waitForLeftCriu(_ record: AppRecord) {
        guard let pid = record.diskWorker, let ticks = record.diskWorkerStartTicks,
            let stat = ProcFS.stat(pid: pid), stat.startTimeTicks == ticks, stat.state != "Z",
            let handle = try? ProcessHandle(adopting: pid)  // gone meanwhile: nothing to wait for
        else { return }
        log(
            .daemon, app: record.name, pid: pid,
            "waiting for the criu (pid \(pid)) the last daemon left \(record.diskIntent == .restore ? "restoring" : "dumping") \(record.name)"
        )
        let timeout = startingPolicy().policy.criuTimeoutNanos
        let now = Clock.monotonicNanos()
        let deadline = min(record.diskIntentStartNanos ?? now, now).saturatingAdd(timeout)
        if (try? Poll.wait(handle.pidfd, events: Int16(POLLIN), until: deadline)) ?? 0 == 0 {  // failed or timed out: kill it
            _ = try? handle.send(SIGKILL)  // gone already: nothing to kill
            log(
                .error, app: record.name, pid: pid,
                "the criu (pid \(pid)) the last daemon left ran past its deadline (\(DurationText.format(timeout)) from its start, --criu-timeout): killed"
            )
        }
    }
}

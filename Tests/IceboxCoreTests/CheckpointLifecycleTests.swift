import Glibc
import IceboxSystem
import Testing

@testable import IceboxCore

/// Evicting to disk in the lifecycle, without root or criu: the checkpoint's two ends (criu's
/// and the main process's) in either order, a failed dump falling back to a kill, what is
/// asked meanwhile, the policy's victim, and a restore's announcement.
@Suite("AppLifecycle: checkpoint to disk and restore")
struct CheckpointLifecycleTests {
    static let written = DiskCheckpoint(
        images: "/var/lib/icebox/images/web", dumpNanos: 120_000_000, syncNanos: 30_000_000, imageBytes: 7 << 20,
        memoryBytes: 13 << 20)

    static func suspended() -> AppLifecycle { AppLifecycleTests.lifecycle(in: .suspended) }

    static func checkpointEvents(_ fx: [LifecycleEffect]) -> [Event] {
        AppLifecycleTests.events(fx).filter { $0.kind == .checkpoint }
    }

    @Test("suspended → dump (intent recorded first) → written and killed, either order → on disk, its figures recorded")
    func writtenThenExitedOrTheOtherWay() {
        for exitFirst in [false, true] {
            var l = Self.suspended()
            let start = l.handle(.evictToDisk(waiter: 7), now: 10_000)
            #expect(start == [.persist, .checkpoint])
            #expect(l.persistentRecord.diskIntent == .checkpoint && l.persistentRecord.diskIntentStartNanos == 10_000)
            #expect(l.state == .suspended, "still suspended (in memory) until the dump is done")
            var fx: [LifecycleEffect] = []
            if exitFirst {
                fx += l.handle(.exited(.signaled(SIGKILL)), now: 20_000)
                #expect(fx.isEmpty, "the tree's end is expected: nothing cleaned up before criu says it wrote: \(fx)")
                fx += l.handle(.checkpointEnded(.written(Self.written)), now: 30_000)
            } else {
                fx += l.handle(.checkpointEnded(.written(Self.written)), now: 20_000)
                #expect(fx.isEmpty, "waits for the main process's end: \(fx)")
                fx += l.handle(.exited(.signaled(SIGKILL)), now: 30_000)
            }
            #expect(fx == [.destroy])
            #expect(l.persistentRecord.diskIntent == .checkpoint, "until cleaned up, a successor finishes it")
            let end = l.handle(.cleanedUp(leftovers: 0, problems: []), now: 40_000)
            #expect(l.state == .onDisk && !l.record.state.isEnded)
            #expect(l.record.images == Self.written.images && l.record.imageBytes == Self.written.imageBytes)
            #expect(l.record.exitStatus == nil && !l.record.killedWhileSuspended && l.record.ending == nil)
            #expect(l.persistentRecord.diskIntent == nil)
            let e = try! #require(Self.checkpointEvents(end).first)
            #expect(e.from == .suspended && e.to == .onDisk && e.imageBytes == 7 << 20 && e.memoryBeforeBytes == 13 << 20)
            #expect(e.memoryAfterBytes == 0)
            let line = LaunchingRequestTests.answered(end, 7, failed: false)
            #expect(line?.contains("suspended → on-disk") == true && line?.contains("image 7.0 MiB") == true, "\(line ?? "none")")
        }
    }

    @Test("a dump that fails: the reason logged, then today's kill eviction; its client hears the end")
    func failedDumpFallsBackToAKill() {
        var l = Self.suspended()
        _ = l.handle(.evictToDisk(waiter: 3), now: 10)
        let why = "Error (criu/sk-unix.c:123): Can't dump half of stream unix connection"
        let fx = l.handle(.checkpointEnded(.failed(why)), now: 20)
        let e = try! #require(Self.checkpointEvents(fx).first)
        #expect(e.detail.contains(why) && e.detail.contains("evicting it by a kill instead") && e.reason == "failed")
        #expect(fx.contains(.killAll) && l.isEvicting)
        _ = l.handle(.exited(.signaled(SIGKILL)), now: 30)
        let end = l.handle(.cleanedUp(leftovers: 0, problems: []), now: 40)
        #expect(l.state == .evicted && l.record.killedWhileSuspended, "relaunched, it is told to restore")
        #expect(LaunchingRequestTests.answered(end, 3, failed: false)?.contains("suspended → evicted") == true)
    }

    @Test("a dump that failed after the tree had gone ends the app at once (nothing left to kill)")
    func failedAfterTheTreeEnded() {
        var l = Self.suspended()
        _ = l.handle(.evictToDisk(waiter: nil), now: 10)
        _ = l.handle(.exited(.signaled(SIGKILL)), now: 20)
        let fx = l.handle(.checkpointEnded(.failed("criu dump killed by SIGKILL")), now: 30)
        #expect(fx.contains(.destroy))
        if case .cleaningUp(.evicted) = l.phase {} else { Issue.record("not cleaning up an eviction: \(l.phase)") }
    }

    @Test("terminate and evict asked during the dump wait for it, then end the app and discard the images")
    func endsAskedDuringTheDump() {
        for (asked, final) in [(LifecycleInput.terminate(waiter: 4, timeout: 1_000), AppState.terminated), (.evict(waiter: 4), .evicted)] {
            var l = Self.suspended()
            _ = l.handle(.evictToDisk(waiter: nil), now: 10)
            #expect(l.handle(asked, now: 15).isEmpty, "nothing done while criu holds the tree")
            _ = l.handle(.checkpointEnded(.written(Self.written)), now: 20)
            let fx = l.handle(.exited(.signaled(SIGKILL)), now: 30)
            #expect(fx == [.discardImages(Self.written.images), .destroy])
            let end = l.handle(.cleanedUp(leftovers: 0, problems: []), now: 40)
            #expect(l.state == final && l.record.images == nil)
            #expect(LaunchingRequestTests.answered(end, 4, failed: false) != nil)
        }
    }

    @Test("evict --to-disk: refused for an app that is not suspended (75 while it changes state), joined while dumping")
    func refusalsAndJoins() {
        var active = AppLifecycleTests.lifecycle(in: .active)
        let fx = active.handle(.evictToDisk(waiter: 1), now: 10)
        #expect(fx.count == 1)
        if case .refuse(1, let line, .failure) = fx.first {
            #expect(line.contains("evict --to-disk checkpoints suspended apps"))
        } else {
            Issue.record("\(fx)")
        }
        var background = AppLifecycleTests.lifecycle(in: .background)
        if case .refuse(1, _, .tryAgain) = background.handle(.evictToDisk(waiter: 1), now: 10).first {} else { Issue.record("background") }
        var l = Self.suspended()
        _ = l.handle(.evictToDisk(waiter: 1), now: 10)
        #expect(l.handle(.evictToDisk(waiter: 2), now: 11).isEmpty)
        if case .refuse(3, _, .tryAgain) = l.handle(.resume(waiter: 3), now: 12).first {} else { Issue.record("resume while dumping") }
        _ = l.handle(.checkpointEnded(.written(Self.written)), now: 20)
        _ = l.handle(.exited(.signaled(SIGKILL)), now: 30)
        let end = l.handle(.cleanedUp(leftovers: 0, problems: []), now: 40)
        #expect(
            LaunchingRequestTests.answered(end, 1, failed: false) != nil && LaunchingRequestTests.answered(end, 2, failed: false) != nil)
    }

    @Test("the policy's victim with --evict-to disk: notice and cut grace, frozen, then checkpointed instead of killed")
    func policyVictimGoesToDisk() {
        var l = AppLifecycleTests.lifecycle(in: .active)
        _ = l.handle(.policyVictim(grace: 1_000, notice: AppLifecycleTests.usr1, toDisk: true), now: 10)
        #expect(l.state == .background && l.pendingEviction)
        _ = l.handle(.tick, now: 2_000)
        let fx = l.handle(.freezeConfirmed(AppLifecycleTests.frozen), now: 3_000)
        #expect(fx.contains(.checkpoint) && !fx.contains(.killAll))
        if case .checkpointing = l.phase {} else { Issue.record("\(l.phase)") }
    }

    @Test("restored: active, its restore logged with the image, the foreground signal sent, waiters told, memory counted")
    func restoredFromDisk() {
        var record = AppLifecycleTests.record()
        record.state = .onDisk
        record.images = Self.written.images
        record.imageBytes = Self.written.imageBytes
        record.options.foregroundSignal = SIGUSR2
        var l = AppLifecycle(restored: record, now: LifecycleInstants.at(50))
        let fx = l.restoredFromDisk(restoreNanos: 80_000_000, imageBytes: record.imageBytes, waiters: [9], now: LifecycleInstants.at(60))
        #expect(l.state == .active && l.record.images == nil && l.record.lastRestoreNanos == 80_000_000 && !l.adopted)
        let e = try! #require(AppLifecycleTests.events(fx).first)
        #expect(e.kind == .restore && e.from == .onDisk && e.to == .active && e.durationNanos == 80_000_000 && e.imageBytes == 7 << 20)
        #expect(fx.first?.isLog == true && fx.contains(.signal(SIGUSR2)) && fx.contains(.launched) && fx.contains(.persist))
        #expect(LaunchingRequestTests.answered(fx, 9, failed: false)?.contains("restored from disk in 80") == true)
    }
}

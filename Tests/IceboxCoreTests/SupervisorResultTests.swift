import Glibc
import IceboxCore
import IceboxSystem
import Synchronization
import Testing

/// The typed results of suspend, resume, terminate, evict and launch, against real apps,
/// each figure checked against the call's own duration and the kernel's state.
@Suite(
    "Supervisor: typed results from real apps", .serialized,
    .enabled(if: SupervisorHost.unavailableReason == nil, "\(SupervisorHost.unavailableReason ?? "")"))
struct SupervisorResultTests {
    static let hasPython = FileIO.exists("/usr/bin/python3") || FileIO.exists("/usr/local/bin/python3")

    /// A python app that says READY=1 at its start and again on SIGUSR1 (its background
    /// notice), through NOTIFY_SOCKET: it ends its grace as soon as it is told.
    static let noticeApp = """
        import os, signal, socket
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        addr = os.environ['NOTIFY_SOCKET']
        def ready(*_): s.sendto(b'READY=1', addr)
        signal.signal(signal.SIGUSR1, ready)
        ready()
        while True: signal.pause()
        """

    static func elapsed(_ body: () throws -> Void) rethrows -> Duration {
        let clock = ContinuousClock()
        let start = clock.now
        try body()
        return clock.now - start
    }

    @Test(
        "suspend: an app that says READY=1 on its notice ends its grace early; the freeze time is the kernel's, within the call",
        .enabled(if: hasPython, "needs python3"))
    func noticeAndGraceFromReadyApp() throws {
        try Supervisor.with { supervisor in
            var options = LaunchOptions(name: "kind", command: ["python3", "-c", Self.noticeApp])
            options.ready = .notify
            let app = try supervisor.launch(options)
            #expect(app.readyMode == .notify)
            #expect(app.readyAfter.map { $0 > .zero } == true, "launch → READY=1, measured: \(app)")
            #expect(app.readyEvent?.kind == .ready && app.readyEvent?.app == "kind")
            let cgroup = try #require(app.cgroup)

            var result: SuspendResult?
            let took = try Self.elapsed { result = try supervisor.suspend("kind", grace: .seconds(20)) }
            let suspended = try #require(result)
            #expect(suspended.name == "kind")
            #expect(suspended.notice == .signal(SIGUSR1), "\(suspended)")
            #expect(suspended.graceGranted == .seconds(20))
            #expect(suspended.graceEnd == .ready, "\(suspended)")
            #expect(suspended.graceUsed < .seconds(20) && suspended.graceUsed < took)
            #expect(suspended.freezeTime > .zero && suspended.freezeTime <= took, "\(suspended.freezeTime) vs \(took)")
            #expect(suspended.backend == app.record.backend && suspended.tasks == 1)
            #expect(suspended.lines.count == 2 && suspended.lines.last?.contains("background → suspended") == true)
            #expect(suspended.events.map(\.kind) == [.notice, .freeze])
            #expect(Kernel.cgroupEvents(cgroup)["frozen"] == "1", "the kernel says frozen")

            var resumed: ResumeResult?
            let resumeTook = try Self.elapsed { resumed = try supervisor.resume("kind") }
            let thaw = try #require(resumed)
            #expect(thaw.how == .thawed)
            #expect(thaw.thawTime.map { $0 > .zero && $0 <= resumeTook } == true, "\(thaw) vs \(resumeTook)")
            #expect(thaw.backend == app.record.backend && thaw.tasks == 1 && thaw.readyAfter == nil)
            #expect(Kernel.cgroupEvents(cgroup)["frozen"] == "0", "the kernel says thawed")

            // resume --wait-ready: the app's READY=1 after its thaw (it says so on SIGUSR1 only,
            // so send one by hand once it is thawed: the foreground signal is not set).
            _ = try supervisor.suspend("kind", grace: .zero)
            let waiting = Thread0.start { try? supervisor.resume("kind", waitReady: true) }
            #expect(Kernel.waitUntil(seconds: 10) { Kernel.cgroupEvents(cgroup)["frozen"] == "0" })
            kill(app.pid, SIGUSR1)
            let ready = try #require(waiting.value(within: 10) ?? nil)
            #expect(ready.how == .thawed && ready.readyAfter.map { $0 > .zero } == true, "\(ready)")
        }
    }

    @Test("suspend with grace 0: no notice to an app without a handler, ended as zero; already suspended is said so")
    func graceZeroAndAlreadySuspended() throws {
        try Supervisor.with { supervisor in
            let app = try supervisor.launch(LaunchOptions(name: "nap", command: ["sleep", "100000"]))
            let cgroup = try #require(app.cgroup)
            let suspended = try supervisor.suspend("nap", grace: .zero)
            #expect(suspended.notice == .noHandler && suspended.graceEnd == .zero && suspended.graceGranted == .zero, "\(suspended)")
            #expect(suspended.freezeTime > .zero && suspended.tasks == 1)
            #expect(Kernel.cgroupEvents(cgroup)["frozen"] == "1")
            let again = try supervisor.suspend("nap")
            #expect(again.graceEnd == .alreadySuspended && again.notice == nil && again.backend == nil && again.events.isEmpty)
            #expect(again.lines == ["nap  already suspended (nothing to do)"])
        }
    }

    @Test("resume during the grace: resumedDuringGrace, nothing thawed; an active app: alreadyActive")
    func resumeInGrace() throws {
        try Supervisor.with { supervisor in
            let app = try supervisor.launch(LaunchOptions(name: "nap", command: ["sleep", "100000"]))
            let cgroup = try #require(app.cgroup)
            let suspending = Thread0.start { (try? supervisor.suspend("nap", grace: .seconds(30))) != nil }
            #expect(Kernel.waitUntil(seconds: 10) { (try? supervisor.state(of: "nap")) == .background })
            let resumed = try supervisor.resume("nap")
            #expect(resumed.how == .resumedDuringGrace && resumed.thawTime == nil && resumed.backend == nil, "\(resumed)")
            #expect(suspending.value(within: 10) == false, "the suspend failed: resumed before it was frozen")
            #expect(Kernel.cgroupEvents(cgroup)["frozen"] == "0")
            #expect(try supervisor.resume("nap").how == .alreadyActive)
        }
    }

    /// A python app that ignores SIGTERM, then says READY=1.
    static let stubbornApp = """
        import os, signal, socket
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'READY=1', os.environ['NOTIFY_SOCKET'])
        while True: signal.pause()
        """

    @Test(
        "terminate: SIGTERM suffices for sleep (143); an app that ignores it is killed at the time-out (137); evict kills",
        .enabled(if: hasPython, "needs python3"))
    func endings() throws {
        try Supervisor.with { supervisor in
            let nap = try supervisor.launch(LaunchOptions(name: "nap", command: ["sleep", "100000"]))
            var result: EndResult?
            let took = try Self.elapsed { result = try supervisor.terminate("nap", timeout: .seconds(10)) }
            let ended = try #require(result)
            #expect(ended.how == .sigterm && ended.state == .terminated && ended.exitStatus == 143, "\(ended)")
            #expect(ended.time > .zero && ended.time <= took)
            #expect(Kernel.gone(nap.pid))

            // Ready once it ignores SIGTERM (an exec-ready shell could get it before its trap).
            var options = LaunchOptions(name: "stubborn", command: ["python3", "-c", Self.stubbornApp])
            options.ready = .notify
            let stubborn = try supervisor.launch(options)
            let killed = try supervisor.terminate("stubborn", timeout: .milliseconds(300))
            #expect(killed.how == .sigkillAfterTimeout && killed.exitStatus == 137, "\(killed)")
            #expect(killed.time >= .milliseconds(300))
            #expect(Kernel.gone(stubborn.pid))

            let victim = try supervisor.launch(LaunchOptions(name: "victim", command: ["sleep", "100000"]))
            let cgroup = try #require(victim.cgroup)
            _ = try supervisor.suspend("victim", grace: .zero)
            let evicted = try supervisor.evict("victim")
            #expect(evicted.how == .evicted && evicted.state == .evicted && evicted.exitStatus == 137, "\(evicted)")
            #expect(Kernel.gone(victim.pid) && !FileIO.exists(cgroup))
        }
    }
}

/// A blocking call on a thread of its own, whose value the test waits for with a deadline.
final class Thread0<T: Sendable>: Sendable {
    private final class Box: Sendable {
        let value = Mutex<T?>(nil)
    }
    private let box = Box()
    private let thread: JoinableThread

    private init(_ body: @escaping @Sendable () -> T) throws {
        let box = self.box
        thread = try JoinableThread { box.value.withLock { $0 = body() } }
    }

    static func start(_ body: @escaping @Sendable () -> T) -> Thread0 { try! Thread0(body) }

    /// The value, once the thread has returned it (within `seconds`); nil otherwise.
    func value(within seconds: UInt64) -> T? {
        guard thread.join(until: Clock.monotonicNanos() + seconds * 1_000_000_000) else { return nil }
        return box.value.withLock { $0 }
    }
}

import Glibc
import IceboxSystem
import IceboxTestSupport
import Synchronization
import Testing

@testable import IceboxCore

@Suite("PressureSpec.parse and PressureTrigger.read(text:)")
struct PressureSpecTests {
    @Test func validSpecs() throws {
        #expect(
            try PressureSpec.parse("some 200ms/2s", privileged: false)
                == PressureSpec(kind: .some, stallNanos: 200_000_000, windowNanos: 2_000_000_000))
        #expect(
            try PressureSpec.parse("full 1s/4s", privileged: false)
                == PressureSpec(kind: .full, stallNanos: 1_000_000_000, windowNanos: 4_000_000_000))
        #expect(try PressureSpec.parse("  some\t1.5s/10s ", privileged: false).stallNanos == 1_500_000_000)
        // With CAP_SYS_RESOURCE any window from 500 ms to 10 s will do.
        #expect(try PressureSpec.parse("some 100ms/500ms", privileged: true).windowNanos == 500_000_000)
        #expect(try PressureSpec.parse("some 100ms/3s", privileged: true).windowNanos == 3_000_000_000)
    }

    @Test func theKernelGetsMicroseconds() throws {
        #expect(try PressureSpec.parse("some 200ms/2s", privileged: false).triggerText == "some 200000 2000000")
        #expect(try PressureSpec.parse("full 1s/4s", privileged: false).triggerText == "full 1000000 4000000")
        #expect(PressureSpec.default.triggerText == "some 150000 2000000")
    }

    @Test func theDefaultIsValidWithoutCapSysResource() throws {
        #expect(try PressureSpec.parse(PressureSpec.defaultText, privileged: false) == .default)
        #expect(PressureSpec.default.description == PressureSpec.defaultText)
    }

    @Test func descriptionParsesBack() throws {
        for text in ["some 150ms/2s", "full 1s/4s", "some 250us/2s", "some 1500ms/6s"] {
            #expect(try PressureSpec.parse(text, privileged: false).description == text)
        }
    }

    @Test("a window that is not a multiple of 2 s is refused without CAP_SYS_RESOURCE, naming a valid one")
    func unprivilegedWindow() {
        #expect {
            try PressureSpec.parse("some 200ms/3s", privileged: false)
        } throws: { error in
            let e = error as? IceboxError
            return e?.code == .usage && e!.message.contains("multiple of 2 s") && e!.message.contains("CAP_SYS_RESOURCE")
                && e!.hint == #"try "some 200ms/4s""#
        }
        #expect {
            try PressureSpec.parse("some 100ms/1s", privileged: false)
        } throws: { error in
            (error as? IceboxError)?.hint == #"try "some 100ms/2s""#
        }
    }

    @Test func nearestValidWindow() {
        let s: UInt64 = 1_000_000_000
        #expect(PressureSpec.nearestValidWindow(3 * s, privileged: false) == 4 * s)
        #expect(PressureSpec.nearestValidWindow(5 * s / 2, privileged: false) == 2 * s)
        #expect(PressureSpec.nearestValidWindow(s / 10, privileged: false) == 2 * s)
        #expect(PressureSpec.nearestValidWindow(60 * s, privileged: false) == 10 * s)
        #expect(PressureSpec.nearestValidWindow(s / 10, privileged: true) == s / 2)
        #expect(PressureSpec.nearestValidWindow(3 * s, privileged: true) == 3 * s)
    }

    @Test(arguments: [
        "", "some", "sometimes 1s/2s", "SOME 1s/2s", "some 1s", "some 1s/2s/3s", "some x/2s", "some 1s/y",
        "some 3s/2s", "some 0s/2s", "some 100ns/2s", "some 100ms/12s", "some 100ms/100ms", "some 1s 2s",
    ])
    func invalidSpecs(text: String) {
        #expect(throws: IceboxError.self) { try PressureSpec.parse(text, privileged: true) }
    }

    @Test func outOfRangeWindowSaysTheRange() {
        #expect {
            try PressureSpec.parse("some 100ms/20s", privileged: false)
        } throws: { error in
            let e = error as? IceboxError
            return e?.message.contains("between 500ms and 10s") == true && e?.hint == #"try "some 100ms/10s""#
        }
    }

    @Test func pressureFileContents() {
        let text = """
            some avg10=1.25 avg60=0.50 avg300=0.07 total=123456
            full avg10=0.00 avg60=0.10 avg300=0.00 total=789

            """
        #expect(
            PressureTrigger.read(text: text)
                == PressureStats(
                    some: .init(avg10: 1.25, avg60: 0.5, avg300: 0.07, totalMicros: 123_456),
                    full: .init(avg10: 0, avg60: 0.1, avg300: 0, totalMicros: 789)))
        // The system-wide cpu file had no full line before Linux 5.13.
        #expect(PressureTrigger.read(text: "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")?.full == nil)
        #expect(PressureTrigger.read(text: "") == nil)
        #expect(PressureTrigger.read(text: "some avg10=x avg60=0.00 avg300=0.00 total=0\n") == nil)
        #expect(PressureTrigger.read(text: "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n") == nil)
    }
}

/// Real triggers on this host's PSI files. No pressure is created here: only that the kernel
/// takes the trigger and the descriptor polls.
@Suite(
    "PressureTrigger", .enabled(if: FileIO.exists(PressureTrigger.systemMemory), "needs PSI (/proc/pressure/memory)"),
    .timeLimit(.minutes(5)))
struct PressureTriggerTests {
    @Test("a trigger on /proc/pressure/memory: a valid descriptor that polls quiet")
    func systemTrigger() throws {
        let trigger = try PressureTrigger(spec: .default)
        #expect(trigger.fd >= 0)
        #expect(fcntl(trigger.fd, F_GETFD) & FD_CLOEXEC != 0)
        #expect(trigger.path == "/proc/pressure/memory")
        let state = try trigger.poll(timeoutNanos: 0)
        #expect(state != .gone)
        let stats = try trigger.stats()
        #expect(stats.full != nil)
    }

    @Test("epoll sees nothing on a quiet trigger, and the registration works")
    func epollRegistration() throws {
        let trigger = try PressureTrigger(spec: PressureSpec.parse("full 1s/2s"))
        let epoll = try Epoll()
        try epoll.add(trigger.fd, events: PressureTrigger.epollEvents, token: 7)
        let ready = try epoll.wait(timeoutNanos: 0)
        #expect(ready.allSatisfy { $0.token == 7 && $0.events & EpollEvents.priority != 0 })
    }

    /// What a thread that gave up CAP_SYS_RESOURCE got from the kernel for each window.
    struct Unprivileged: Sendable {
        var stillPrivileged: Bool? = nil
        var oddWindow: Result<Void, any Error>? = nil
        var evenWindow: Result<Void, any Error>? = nil
    }

    /// Capabilities belong to a thread: a thread of this test gives up CAP_SYS_RESOURCE and
    /// writes the triggers from there, so the kernel's rule for the unprivileged is tested
    /// whether or not this process has that capability (as root usually does).
    @Test("the kernel itself refuses a 3 s window without CAP_SYS_RESOURCE (EINVAL)")
    func kernelRefusesOddWindow() throws {
        let seen = Mutex(Unprivileged())
        let thread = try JoinableThread {
            let keep = Set(Capabilities.allNames).subtracting(["cap_sys_resource"])
            guard (try? Capabilities.keepOnly(keep)) != nil else { return }
            let still = Capabilities.hasEffective("cap_sys_resource")
            let odd = Result<Void, any Error> {
                _ = try PressureTrigger(spec: PressureSpec(kind: .some, stallNanos: 100_000_000, windowNanos: 3_000_000_000))
            }
            // The same with a 4 s window is fine.
            let even = Result<Void, any Error> {
                _ = try PressureTrigger(spec: PressureSpec(kind: .some, stallNanos: 100_000_000, windowNanos: 4_000_000_000))
            }
            seen.withLock { $0 = Unprivileged(stillPrivileged: still, oddWindow: odd, evenWindow: even) }
        }
        try #require(thread.join(until: Clock.monotonicNanos() + 10_000_000_000), "the thread did not finish")
        let unprivileged = seen.withLock { $0 }
        try #require(unprivileged.stillPrivileged == false, "the thread could not drop CAP_SYS_RESOURCE")
        let odd = try #require(unprivileged.oddWindow)
        #expect(throws: SystemError("write the PSI trigger \"some 100000 3000000\" to", path: "/proc/pressure/memory", errno: EINVAL)) {
            try odd.get()
        }
        try #require(unprivileged.evenWindow).get()
    }

    /// Why a cgroup's memory.pressure cannot be watched here, or nil if it can: a cgroup is
    /// made under the cgroup2 mount, and the kernel gives it memory.pressure when it gives
    /// the mount's root one (PSI on, not turned off for cgroups with cgroup_disable=pressure).
    static var cgroupPressureUnavailable: String? {
        if getuid() != 0 { return "needs root (makes a cgroup)" }
        guard let unified = CgroupMounts.read().unified else { return "needs a cgroup2 mount" }
        if let readOnly = cgroupMountReadOnly(unified) { return readOnly }
        if !FileIO.exists(unified + "/memory.pressure") { return "\(unified) has no memory.pressure (PSI off for cgroups)" }
        return nil
    }

    @Test(
        "a trigger on a cgroup's memory.pressure reports gone once the cgroup is removed",
        .enabled(if: PressureTriggerTests.cgroupPressureUnavailable == nil, "\(PressureTriggerTests.cgroupPressureUnavailable ?? "")"))
    func cgroupTriggerGoesAway() throws {
        let unified = try #require(CgroupMounts.read().unified)
        let cg = Cgroup2(path: unified + "/icebox-test-psi-\(getpid())")
        try cg.create()
        defer { try? cg.remove() }
        try #require(FileIO.exists(cg.file("memory.pressure")), "\(cg.path) has no memory.pressure although \(unified) has one")
        let trigger = try PressureTrigger(spec: .default, path: cg.file("memory.pressure"))
        #expect(try trigger.poll() == .quiet)
        try cg.remove()
        #expect(try trigger.poll() == .gone)
    }
}

extension PressureTrigger {
    /// Waits up to `timeoutNanos` (0: just look) for the trigger, as the daemon's epoll does.
    /// The file always polls readable and writable; only POLLPRI means pressure.
    fileprivate func poll(timeoutNanos: UInt64 = 0) throws(SystemError) -> State {
        let revents = try Poll.wait(fd, events: Int16(POLLPRI), timeoutNanos: timeoutNanos)
        if revents & Int16(POLLERR | POLLNVAL) != 0 { return .gone }
        return revents & Int16(POLLPRI) != 0 ? .crossed : .quiet
    }
}

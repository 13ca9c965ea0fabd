import Glibc
import IceboxCore
import IceboxSystem
import IceboxTestSupport
import Testing

/// The one owner of an app's cgroups against the real kernel: fresh directories over
/// leftovers, members in sub-cgroups, a destroy that never blocks.
@Suite("AppCgroups", .serialized, .enabled(if: CgroupTestRoots.hasV2, "\(CgroupTestRoots.v2Unavailable ?? "")"), .timeLimit(.minutes(5)))
struct AppCgroupsTests {
    /// The backend that exercises the most directories this host has.
    static var richestBackend: BackendKind { CgroupTestRoots.hasFreezerV1 ? .cgroup1 : .cgroup2 }

    static func create(_ roots: CgroupTestRoots, _ name: String, backend: BackendKind = richestBackend) throws -> AppCgroups {
        try AppCgroups.create(
            name: name, v2Root: roots.v2, freezerV1Root: roots.freezerV1, memoryV1Root: roots.memoryV1, backend: backend)
    }

    @Test("the app's processes land in every cgroup it has; members() includes sub-cgroups")
    func spawnAndMembers() throws {
        let roots = CgroupTestRoots()
        defer { roots.cleanup() }
        let cgroups = try Self.create(roots, "web")
        #expect(cgroups.v2Path == roots.v2 + "/web")
        #expect(cgroups.freezerV1Path == (Self.richestBackend == .cgroup1 ? roots.freezerV1! + "/web" : nil))
        #expect(cgroups.memoryV1Path == roots.memoryV1.map { $0 + "/web" })
        let child = try CgroupChild(["sleep 1000 & sleep 1000 & wait"], in: cgroups)
        try #require(eventually { cgroups.processCount() == 3 })
        let membership = readFile("/proc/\(child.pid)/cgroup") ?? ""
        #expect(membership.contains("0::/" + roots.v2.split(separator: "/").last! + "/web\n"))
        if Self.richestBackend == .cgroup1 {
            #expect(membership.contains(":freezer:/" + roots.freezerV1!.split(separator: "/").last! + "/web\n"))
        }
        if roots.memoryV1 != nil { #expect(membership.contains(":memory:/" + roots.memoryV1!.split(separator: "/").last! + "/web\n")) }

        // Two levels down: still the app's.
        let deep = cgroups.v2Path! + "/a/b"
        try FileIO.makeDirectories(deep)
        let children = try #require(cgroups.members()).filter { $0 != child.pid }
        try FileIO.write(deep + "/cgroup.procs", String(children[0]))
        try FileIO.write(cgroups.v2Path! + "/a/cgroup.procs", String(children[1]))
        #expect(Set(cgroups.members() ?? []) == Set([child.pid] + children))
        #expect(cgroups.v2!.procs() == [child.pid], "cgroup.procs alone misses the sub-cgroups")
        #expect(cgroups.processCount() == 3)
        #expect(cgroups.events()?.populated == true)

        // Re-adopted from the registry's paths, it finds the same processes.
        let adopted = AppCgroups.adopt(v2: cgroups.v2Path, freezerV1: cgroups.freezerV1Path, memoryV1: cgroups.memoryV1Path)
        #expect(adopted.name == "web")
        #expect(Set(adopted.members() ?? []) == Set(cgroups.members() ?? []))
        #expect(AppCgroups.adopt(v2: nil, freezerV1: nil, memoryV1: nil).members() == nil)
    }

    @Test("members() reads the kept cgroup.procs afresh each time: a process just gone is not listed")
    func keptProcsIsFresh() throws {
        let roots = CgroupTestRoots()
        defer { roots.cleanup() }
        let cgroups = try Self.create(roots, "web")
        let child = try CgroupChild(["sleep 1000 & sleep 1000 & wait"], in: cgroups)
        // Read again and again through the kept descriptor while the sleeps start.
        try #require(eventually { cgroups.processCount() == 3 })
        let sleepers = (cgroups.members() ?? []).filter { $0 != child.pid }
        try #require(sleepers.count == 2)
        kill(sleepers[0], SIGKILL)
        try #require(eventually { !FileIO.exists("/proc/\(sleepers[0])") }, "the shell reaps the killed sleep")
        // At once, not a second later: v1's cgroup.procs would hand a kept descriptor the
        // list it cached at the last read (see Cgroup1Freezer).
        #expect(Set(cgroups.members() ?? []) == [child.pid, sleepers[1]])
        #expect(cgroups.processCount() == 2)
    }

    @Test("the app's v2 cgroup is known by its directory's inode")
    func v2DirectoryID() throws {
        let roots = CgroupTestRoots()
        defer { roots.cleanup() }
        let cgroups = try Self.create(roots, "web", backend: .cgroup2)
        let id = try #require(cgroups.v2DirectoryID)
        var st = stat()
        try #require(lstat(cgroups.v2Path!, &st) == 0)
        #expect(id == UInt64(st.st_ino))
    }

    /// PIDFD_GET_INFO came with Linux 6.13: older kernels say nil, and the daemon reads /proc.
    static let pidfdGetInfo: Bool = (try? ProcessHandle(adopting: getpid()))?.cgroupID() != nil

    @Test(
        "a pidfd says which v2 cgroup its process is in (PIDFD_GET_INFO): the app's directory's inode, until it moves",
        .enabled(if: AppCgroupsTests.pidfdGetInfo, "this kernel has no PIDFD_GET_INFO (Linux 6.13)"))
    func pidfdInfoCgroupID() throws {
        let roots = CgroupTestRoots()
        defer { roots.cleanup() }
        let cgroups = try Self.create(roots, "web", backend: .cgroup2)
        let child = try CgroupChild(["sleep 1000"], in: cgroups)
        let id = try #require(cgroups.v2DirectoryID)
        var st = stat()
        #expect(child.handle.cgroupID() == id)
        let sub = cgroups.v2Path! + "/sub"
        try FileIO.makeDirectories(sub)
        try FileIO.write(sub + "/cgroup.procs", String(child.pid))
        #expect(child.handle.cgroupID() != id, "moved to a sub-cgroup: another id")
        try #require(lstat(sub, &st) == 0)
        #expect(child.handle.cgroupID() == UInt64(st.st_ino))
    }

    @Test("a leftover with sub-cgroups (and no process) is removed bottom-up and made afresh")
    func leftoverIsRemadeFresh() throws {
        let roots = CgroupTestRoots()
        defer { roots.cleanup() }
        var leftovers = [roots.v2 + "/web"]
        if let freezer = roots.freezerV1, Self.richestBackend == .cgroup1 { leftovers.append(freezer + "/web") }
        if let memory = roots.memoryV1 { leftovers.append(memory + "/web") }
        var before: [String: UInt64] = [:]
        for dir in leftovers {
            try FileIO.makeDirectories(dir + "/sub/deeper")
            before[dir] = inode(dir)
        }
        // A v1 freezer left FROZEN would freeze the new app at once.
        if Self.richestBackend == .cgroup1 { try FileIO.write(roots.freezerV1! + "/web/freezer.state", "FROZEN") }

        let cgroups = try Self.create(roots, "web")
        for dir in leftovers {
            #expect(isDirectoryOnDisk(dir))
            #expect(!FileIO.exists(dir + "/sub"), "\(dir)/sub should be gone")
            #expect(inode(dir) != before[dir], "\(dir) was reused, not made afresh")
        }
        if Self.richestBackend == .cgroup1 { #expect(readFile(roots.freezerV1! + "/web/freezer.state")?.trimmed() == "THAWED") }
        #expect(cgroups.members() == [])
    }

    @Test("a leftover with a live process (in a sub-cgroup): a clear error, nothing removed")
    func leftoverWithAProcessIsRefused() throws {
        let roots = CgroupTestRoots()
        defer { roots.cleanup() }
        let other = try Self.create(roots, "web", backend: .cgroup2)
        let child = try CgroupChild(["exec sleep 1000"], in: other)
        try FileIO.makeDirectories(roots.v2 + "/web/sub")
        try FileIO.write(roots.v2 + "/web/sub/cgroup.procs", String(child.pid))

        #expect {
            _ = try Self.create(roots, "web")
        } throws: { error in
            guard let error = error as? IceboxError else { return false }
            print("refused: \(error)")
            return error.message.contains(roots.v2 + "/web") && error.message.contains("already has 1 process")
                && error.message.contains("pid \(child.pid)") && error.hint?.contains("--name") == true
        }
        #expect(isDirectoryOnDisk(roots.v2 + "/web/sub"))
        #expect(CgroupTree.processes(roots.v2 + "/web") == [child.pid])
        #expect(child.isAlive)
        // Nothing of the other app's was removed, nothing of the failed attempt made.
        if let memory = roots.memoryV1 { #expect(isDirectoryOnDisk(memory + "/web") == (other.memoryV1Path != nil)) }
        if let freezer = roots.freezerV1 { #expect(!FileIO.exists(freezer + "/web")) }
    }

    /// cgroup.kill came with Linux 5.14; the kernel gives it to every cgroup but the root,
    /// so an empty cgroup is made to look, and removed.
    static let hasCgroupKill: Bool = {
        guard CgroupTestRoots.hasV2 else { return false }
        let probe = CgroupTestRoots().v2
        guard mkdir(probe, 0o755) == 0 else { return false }
        defer { rmdir(probe) }
        return FileIO.exists(probe + "/cgroup.kill")
    }()

    @Test(
        "a cgroup that saw cgroup.kill is never reused: a process spawned after create lives",
        .enabled(if: AppCgroupsTests.hasCgroupKill, "this kernel has no cgroup.kill (Linux 5.14)"))
    func killedCgroupIsNotReused() throws {
        let roots = CgroupTestRoots()
        defer { roots.cleanup() }
        let first = try Self.create(roots, "web", backend: .cgroup2)
        try #require(FileIO.exists(first.v2Path! + "/cgroup.kill"), "\(first.v2Path!) has no cgroup.kill")
        let victim = try CgroupChild(["exec sleep 1000"], in: first)
        #expect(first.killAll().isEmpty)
        #expect(eventually { !victim.isAlive })
        let killedInode = inode(first.v2Path!)
        // The daemon crashed before removing it: the next launch under that name.
        first.close()
        let second = try Self.create(roots, "web", backend: .cgroup2)
        #expect(inode(second.v2Path!) != killedInode)
        let child = try CgroupChild(["exec sleep 1000"], in: second)
        usleep(200_000)
        #expect(child.isAlive, "a process cloned into a killed cgroup dies at once")
        #expect(second.members() == [child.pid])
    }

    @Test(
        "destroy: a frozen app with a process in a sub-cgroup → .waiting while it lives, then .done; every directory gone",
        .enabled(if: CgroupTestRoots.hasFreezerV1, "needs a v1 freezer hierarchy to keep a task alive for a while"))
    func destroyWithASubCgroup() throws {
        let roots = CgroupTestRoots()
        defer { roots.cleanup() }
        let cgroups = try Self.create(roots, "web", backend: .cgroup2)
        let child = try CgroupChild(["sleep 1000 & sleep 1000 & wait"], in: cgroups)
        try #require(eventually { cgroups.processCount() == 3 })
        let sub = cgroups.v2Path! + "/sub"
        try FileIO.makeDirectories(sub + "/deeper")
        let moved = try #require(cgroups.members()?.first { $0 != child.pid })
        try FileIO.write(sub + "/cgroup.procs", String(moved))
        // The process in the sub-cgroup is also held by a v1 freezer the app does not own, so
        // it cannot act on SIGKILL until the test lets go: the destroy must wait for it.
        let holder = roots.freezerV1! + "/holder"
        try FileIO.makeDirectories(holder)
        try FileIO.write(holder + "/cgroup.procs", String(moved))
        try FileIO.write(holder + "/freezer.state", "FROZEN")
        try #require(eventually { readFile(holder + "/freezer.state")?.trimmed() == "FROZEN" })
        // The app frozen too: cgroup.kill gets through a v2 freeze.
        _ = try cgroups.freezer(backend: .cgroup2, fallbackMembers: { [] }).freeze(deadline: Clock.monotonicNanos() + 5_000_000_000)
        let dirs = [cgroups.v2Path, sub, cgroups.memoryV1Path].compactMap { $0 }

        let start = Clock.monotonicNanos()
        var progress = cgroups.beginDestroy(now: start, deadline: start + 5_000_000_000, mainPID: child.pid)
        var stepper = Stepper()
        while Clock.monotonicNanos() < start + 50_000_000 {
            guard case .waiting(let recheckAt, let watch) = progress else {
                Issue.record("expected .waiting while a task lives, got \(progress)")
                return
            }
            #expect(watch != nil, "cgroup.events is the descriptor to wait on")
            let now = Clock.monotonicNanos()
            if recheckAt > now { Poll.nap(on: watch ?? -1, events: Int16(POLLPRI), timeoutNanos: recheckAt - now) }
            let before = Clock.monotonicNanos()
            progress = cgroups.stepDestroy(now: before)
            stepper.longestStepNanos = max(stepper.longestStepNanos, Clock.monotonicNanos() - before)
        }
        // Killed tasks exit once they run: on a loaded machine that may take longer than the
        // 50 ms above (seen once in a full parallel run).
        #expect(eventually(seconds: 2) { CgroupTree.processes(dirs[0]) == [moved] }, "the others are dead, the held one is not")
        #expect(isDirectoryOnDisk(sub))

        try FileIO.write(holder + "/freezer.state", "THAWED")
        let outcome = stepper.run(destroy: cgroups, first: progress)
        print("destroy: \(outcome), longest step \(DurationText.format(stepper.longestStepNanos))")
        #expect(outcome == .done(leftovers: 2))
        for dir in dirs { #expect(!FileIO.exists(dir), "\(dir) should be gone") }
        #expect(cgroups.events() == nil, "its descriptors are closed, its files gone")
        #expect(stepper.longestStepNanos < StepwiseFreezeTests.stepBudget(deadline: 5_000_000_000))
        #expect(cgroups.stepDestroy(now: Clock.monotonicNanos()) == .done(leftovers: 2))
    }

    @Test("destroy of an app frozen by its own backend: killed, thawed where v1 needs it, every directory gone")
    func destroyAFrozenApp() throws {
        let roots = CgroupTestRoots()
        defer { roots.cleanup() }
        let backend = Self.richestBackend
        let cgroups = try Self.create(roots, "web", backend: backend)
        let child = try CgroupChild(["sleep 1000 & sleep 1000 & wait"], in: cgroups)
        try #require(eventually { cgroups.processCount() == 3 })
        try FileIO.makeDirectories(cgroups.v2Path! + "/sub")
        _ = try cgroups.freezer(backend: backend, fallbackMembers: { [] }).freeze(deadline: Clock.monotonicNanos() + 5_000_000_000)
        let dirs = [cgroups.v2Path, cgroups.freezerV1Path, cgroups.memoryV1Path].compactMap { $0 }

        let now = Clock.monotonicNanos()
        var stepper = Stepper()
        let outcome = stepper.run(
            destroy: cgroups, first: cgroups.beginDestroy(now: now, deadline: now + 5_000_000_000, mainPID: child.pid))
        print("destroy (\(backend.rawValue), frozen): \(outcome) after \(stepper.steps) steps")
        #expect(outcome == .done(leftovers: 2))
        for dir in dirs { #expect(!FileIO.exists(dir), "\(dir) should be gone") }
        #expect(eventually { !child.isAlive })
    }

    @Test(
        "destroy past its deadline: .failed naming the path and errno; a later destroy finishes",
        .enabled(if: CgroupTestRoots.hasFreezerV1, "needs a v1 freezer hierarchy to hold a task where SIGKILL cannot reach it"))
    func destroyPastDeadline() throws {
        let roots = CgroupTestRoots()
        defer { roots.cleanup() }
        // A v1 freezer the app does not own holds its task frozen: SIGKILL waits for a thaw
        // that its owner will not do.
        let holder = roots.freezerV1! + "/holder"
        try FileIO.makeDirectories(holder)
        let holderProcs = try FileIO.openDescriptor(holder + "/cgroup.procs", flags: O_WRONLY)
        defer { close(holderProcs) }
        let cgroups = try AppCgroups.create(name: "web", v2Root: roots.v2, freezerV1Root: nil, memoryV1Root: nil, backend: .cgroup2)
        var request = SpawnRequest(executable: "/bin/sleep", arguments: ["sleep", "1000"], environment: [])
        let descriptors = try cgroups.spawnDescriptors()
        descriptors.apply(to: &request)
        request.v1ProcsFD = holderProcs
        let held = try Spawner.spawn(request).handle
        descriptors.close()
        defer {
            _ = try? held.send(SIGKILL)
            try? FileIO.write(holder + "/freezer.state", "THAWED")
            _ = try? held.wait(until: Clock.monotonicNanos() + 5_000_000_000)
        }
        try FileIO.write(holder + "/freezer.state", "FROZEN")
        try #require(eventually { readFile(holder + "/freezer.state")?.trimmed() == "FROZEN" })

        let now = Clock.monotonicNanos()
        var stepper = Stepper()
        let outcome = stepper.run(destroy: cgroups, first: cgroups.beginDestroy(now: now, deadline: now + 200_000_000))
        print("destroy past its deadline: \(outcome)")
        guard case .failed(let problems) = outcome else {
            Issue.record("expected .failed, got \(outcome)")
            return
        }
        #expect(stepper.waits > 0)
        #expect(problems.contains { $0.contains("rmdir") && $0.contains(cgroups.v2Path!) && $0.contains("Device or resource busy") })
        #expect(problems.contains { $0.contains(cgroups.v2Path!) && $0.contains("still has processes") })
        #expect(problems.contains { $0.contains("pid \(held.pid)") })
        #expect(isDirectoryOnDisk(cgroups.v2Path!))

        // Once the holder lets go, the task dies and a second destroy completes.
        try FileIO.write(holder + "/freezer.state", "THAWED")
        let again = Clock.monotonicNanos()
        // The thawed task may die of the first kill before the second destroy looks (0) or be
        // killed by it (1): either way the destroy completes.
        let second = stepper.run(destroy: cgroups, first: cgroups.beginDestroy(now: again, deadline: again + 5_000_000_000))
        #expect(second == .done(leftovers: 1) || second == .done(leftovers: 0), "\(second)")
        #expect(!FileIO.exists(cgroups.v2Path!))
    }

    @Test("create refuses a backend whose hierarchy is missing, and a bad name, making nothing")
    func createRefusesWhatItCannotDo() throws {
        let roots = CgroupTestRoots()
        defer { roots.cleanup() }
        #expect(throws: IceboxError.self) {
            _ = try AppCgroups.create(name: "web", v2Root: nil, freezerV1Root: nil, memoryV1Root: nil, backend: .cgroup2)
        }
        #expect(throws: IceboxError.self) {
            _ = try AppCgroups.create(name: "web", v2Root: roots.v2, freezerV1Root: nil, memoryV1Root: nil, backend: .cgroup1)
        }
        #expect(throws: IceboxError.self) {
            _ = try AppCgroups.create(name: "../escape", v2Root: roots.v2, freezerV1Root: nil, memoryV1Root: nil, backend: .cgroup2)
        }
        #expect(!FileIO.exists(roots.v2 + "/web"))
    }
}

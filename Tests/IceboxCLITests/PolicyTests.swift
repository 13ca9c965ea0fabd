import Foundation
import Glibc
import IceboxCore
import Testing

/// The memory policy on real processes: each trigger, the eviction order, restoration,
/// compaction and the file-lock check.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct PolicyTests {
    /// A python app that allocates and touches MB of anonymous memory, then says READY=1.
    func hog(_ box: Sandbox, megabytes: Int) -> [String] {
        let code = """
            import os, socket, time
            data = bytearray(\(megabytes) * 1024 * 1024)
            for i in range(0, len(data), 4096): data[i] = 1
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b'READY=1', os.environ['NOTIFY_SOCKET'])
            while True: time.sleep(1)
            """
        return ["python3", "-c", code]
    }

    /// The apps chosen by the policy, in order.
    func victims(_ box: Sandbox) -> [String] {
        box.events().filter { $0.kind == .policy && $0.detail.hasPrefix("chosen for eviction") }.map(\.app)
    }

    /// The apps the policy has finished evicting (killed and reaped), in order.
    func evicted(_ box: Sandbox) -> [String] {
        box.events().filter { $0.kind == .policy && $0.detail.hasPrefix("evicted for") }.map(\.app)
    }

    func waitFor(_ what: String, timeout: Double = 20, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while try !condition() && Date() < deadline { usleep(50_000) }
        #expect(try condition(), "timed out waiting for \(what)")
    }

    @Test("a memory budget evicts suspended apps oldest first, and stops once under it")
    func budget() throws {
        let box = Sandbox()
        defer { box.close() }
        for name in ["first", "second", "third"] {
            #expect(try box.icebox(["launch", "--ready", "notify", name, "--"] + hog(box, megabytes: 40)).status == 0)
            #expect(try box.icebox(["suspend", "--grace", "0", name]).status == 0)
        }
        #expect(try box.icebox(["launch", "--ready", "notify", "fg", "--"] + hog(box, megabytes: 40)).status == 0)
        let apps = try box.apps()
        let total = apps.values.compactMap(\.memoryBytes).reduce(0, +)
        #expect(apps["first"]?.memorySource != nil)
        // A budget that fits two of the four apps: the two oldest suspended ones go.
        let budget = total / 2 + total / 8
        let set = try box.icebox(["policy", "set", "--memory-budget", String(budget)])
        #expect(set.status == 0, "\(set.output)")
        try waitFor("two evictions") { evicted(box).count >= 2 }
        let after = try box.apps()
        #expect(victims(box) == ["first", "second"])
        #expect(after["first"]?.state == .evicted && after["second"]?.state == .evicted)
        #expect(after["third"]?.state == .suspended, "the policy must stop once under budget")
        #expect(after["fg"]?.state == .active)
        let result = box.events("first").first { $0.kind == .policy && $0.detail.hasPrefix("evicted for memory budget") }
        #expect(result?.detail.contains("→") == true && result?.durationNanos != nil)
    }

    @Test("a policy victim cannot put off its eviction with EXTEND_TIMEOUT_USEC: it goes within its eviction grace")
    func victimCannotExtendItsGrace() throws {
        let box = Sandbox()
        defer { box.close() }
        // On the notice it asks for 60 s more, every 100 ms (before: granted up to --max-grace).
        let app = box.pythonApp(
            onNotice: "threading.Thread(target=extend, daemon=True).start()",
            extra: """
                import threading
                def extend():
                    while True:
                        notify('EXTEND_TIMEOUT_USEC=60000000')
                        time.sleep(0.1)
                """)
        let r = try box.icebox(["launch", "--ready", "notify", "--max-grace", "60s", "stubborn", "--", "python3", app])
        #expect(r.status == 0, "\(r.output)")
        let set = try box.icebox(["policy", "set", "--memory-budget", "1M", "--protect-active", "no", "--eviction-grace", "1s"])
        #expect(set.status == 0, "\(set.output)")
        try waitFor("the eviction", timeout: 15) { evicted(box).contains("stubborn") }
        let events = box.events("stubborn")
        let chosen = try #require(events.first { $0.kind == .policy && $0.detail.hasPrefix("chosen for eviction") })
        let gone = try #require(events.first { $0.kind == .policy && $0.detail.hasPrefix("evicted for") })
        let took = gone.monotonicNanos.saturatingSub(chosen.monotonicNanos)
        #expect(took < 4_000_000_000, "evicted \(DurationText.format(took)) after it was chosen; its eviction grace is 1 s")
        #expect(events.filter { $0.detail.hasPrefix("EXTEND_TIMEOUT_USEC ignored: chosen for eviction") }.count == 1)
        #expect(!events.contains { $0.detail.hasPrefix("EXTEND_TIMEOUT_USEC: grace extended") })
        #expect(try box.apps()["stubborn"]?.state == .evicted)
    }

    @Test("a victim resumed during its eviction grace no longer holds up the policy: the next app is evicted")
    func resumedVictimIsWithdrawn() throws {
        let box = Sandbox()
        defer { box.close() }
        // It handles the notice and never says READY=1: its 5 s eviction grace runs on.
        #expect(try box.icebox(["launch", "--ready", "notify", "first", "--", "python3", box.pythonApp(onNotice: "pass")]).status == 0)
        let set = try box.icebox(["policy", "set", "--memory-budget", "1M", "--protect-active", "no", "--eviction-grace", "5s"])
        #expect(set.status == 0, "\(set.output)")
        try waitFor("first chosen") { victims(box) == ["first"] }
        // Another app, suspended while first is in flight (one eviction at a time: it waits).
        #expect(try box.icebox(["launch", "second", "--", "sleep", "1000"]).status == 0)
        #expect(try box.icebox(["suspend", "--grace", "0", "second"]).status == 0)
        #expect(try box.icebox(["resume", "first"]).status == 0)
        // Before: first stayed the victim in flight while it lived, and nothing else was evicted.
        try waitFor("second evicted", timeout: 5) { evicted(box).contains("second") }
        #expect(box.events("first").contains { $0.detail.hasPrefix("eviction withdrawn: resumed before it was frozen") })
        #expect(try box.apps()["second"]?.state == .evicted)
    }

    @Test("--max-suspended evicts the longest-suspended app beyond the cap")
    func countCap() throws {
        let box = Sandbox()
        defer { box.close() }
        #expect(try box.icebox(["policy", "set", "--max-suspended", "2"]).status == 0)
        for name in ["a", "b", "c"] {
            _ = try box.icebox(["launch", name, "--", "sleep", "1000"])
            _ = try box.icebox(["suspend", "--grace", "0", name])
        }
        try waitFor("an eviction") { evicted(box).count >= 1 }
        #expect(victims(box) == ["a"])
        let apps = try box.apps()
        #expect(apps["a"]?.state == .evicted)
        #expect(apps["b"]?.state == .suspended && apps["c"]?.state == .suspended)
    }

    @Test("the order: band first, then state, then age; critical never, the active app protected")
    func order() throws {
        let box = Sandbox()
        defer { box.close() }
        // Launched and suspended in this order, so "normal-old" is the longest suspended.
        let plan: [(String, String, Bool)] = [
            ("normal-old", "normal", true), ("high-old", "high", true), ("low-new", "low", true),
            ("critical", "critical", true), ("normal-new", "normal", true), ("bg-normal", "normal", false), ("active", "normal", false),
        ]
        for (name, band, suspend) in plan {
            _ = try box.icebox(["launch", "--priority", band, name, "--", "sleep", "1000"])
            if suspend { _ = try box.icebox(["suspend", "--grace", "0", name]) }
        }
        // "bg-normal" goes to the background and stays there (a long grace, a handler that never answers).
        let app = box.pythonApp(onNotice: "pass")
        _ = try box.icebox(["terminate", "bg-normal"])
        _ = try box.icebox(["launch", "--ready", "notify", "--grace", "60s", "bg-normal", "--", "python3", app])
        let sandbox = box
        Thread { _ = try? sandbox.icebox(["suspend", "bg-normal"]) }.start()
        try waitFor("background") { try box.apps()["bg-normal"]?.state == .background }
        // A budget nothing fits: everything that may go, goes, in order.
        #expect(try box.icebox(["policy", "set", "--memory-budget", "1"]).status == 0)
        try waitFor("five evictions", timeout: 30) { evicted(box).count >= 5 }
        #expect(victims(box) == ["low-new", "normal-old", "normal-new", "bg-normal", "high-old"])
        let apps = try box.apps()
        #expect(apps["critical"]?.state == .suspended, "critical is never evicted")
        #expect(apps["active"]?.state == .active, "the active app is protected")
        #expect(box.events().contains { $0.detail.contains("no app may be evicted") })
    }

    @Test(
        "real PSI pressure from a memory hog in a small v1 memory cgroup evicts the suspended app",
        .enabled(if: Sandbox.writableMounts.memoryV1 != nil, "no v1 memory cgroup hierarchy to confine the hog"),
        .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"))
    func pressure() throws {
        let box = Sandbox()
        defer { box.close() }
        _ = try box.icebox(["launch", "idle", "--", "sleep", "1000"])
        _ = try box.icebox(["suspend", "--grace", "0", "idle"])
        // The hog writes a file three times its memory limit and reads it back again and
        // again: page cache thrashing inside its cgroup, which the kernel counts as stall.
        let file = box.dir + "/hogfile"
        let r = try box.icebox([
            "launch", "hog", "--", "sh", "-c", "sleep 0.3; head -c 200M /dev/zero > \(file); while :; do cat \(file) > /dev/null; done",
        ])
        #expect(r.status == 0)
        let memory = try #require(try box.apps()["hog"]?.memoryV1, "the hog has no v1 memory cgroup")
        try String(64 * 1024 * 1024).write(toFile: memory + "/memory.limit_in_bytes", atomically: false, encoding: .utf8)
        let set = try box.icebox(["policy", "set", "--pressure", "some 50ms/2s", "--pressure-scope", "apps"])
        #expect(set.status == 0, "\(set.output)")
        try waitFor("a pressure eviction", timeout: 40) { try box.apps()["idle"]?.state == .evicted }
        #expect(box.events().contains { $0.kind == .pressure })
        #expect(box.events("idle").contains { $0.detail.contains("evicted for memory pressure") })
        #expect(try box.apps()["hog"]?.state == .active, "the active hog is protected")
    }

    @Test("a pressure window the kernel would refuse is explained, not applied")
    func pressureValidation() throws {
        let box = Sandbox()
        defer { box.close() }
        let r = try box.icebox(["policy", "set", "--pressure", "some 100ms/3s"])
        #expect(r.status == 64)
        #expect(r.stderr.contains("2 s") || r.stderr.contains("2s"), "\(r.stderr)")
    }

    @Test("an evicted app comes back where it left off (state restoration)")
    func restoration() throws {
        let box = Sandbox()
        defer { box.close() }
        let counter = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/examples/counter.py").path
        _ = try box.icebox(["launch", "--ready", "notify", "counter", "--", "python3", counter])
        try waitFor("counting") { (try box.apps()["counter"]?.statusText ?? "") != "count 0" }
        #expect(try box.icebox(["suspend", "counter"]).stdout.contains("READY=1"))
        _ = try box.icebox(["evict", "counter"])
        let saved = try String(contentsOfFile: box.stateDir + "/apps/counter/counter.json", encoding: .utf8)
        let savedCount = try #require(saved.split(separator: ":").last.flatMap { Int($0.filter(\.isNumber)) })
        #expect(savedCount > 0)
        #expect(try box.icebox(["relaunch", "counter"]).status == 0)
        let log = try box.icebox(["logs", "counter"]).stdout
        #expect(log.contains("fresh start (fresh)"))
        #expect(log.contains("restored count \(savedCount)"), "\(log)")
    }

    @Test("compaction of a frozen app drops its file-backed pages; --compact-after does it on its own")
    func compaction() throws {
        let box = Sandbox()
        defer { box.close() }
        let file = box.dir + "/mapped"
        let code = """
            import mmap, os, socket, time
            with open('\(file)', 'wb') as f: f.write(os.urandom(64 * 1024 * 1024)); f.flush(); os.fsync(f.fileno())
            f = open('\(file)', 'rb'); m = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
            total = sum(m[i] for i in range(0, len(m), 4096))
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b'READY=1', os.environ['NOTIFY_SOCKET'])
            while True: time.sleep(1)
            """
        _ = try box.icebox(["launch", "--ready", "notify", "--ready-timeout", "60s", "mapper", "--", "python3", "-c", code])
        let refused = try box.icebox(["compact", "mapper"])
        #expect(refused.status == 1 && refused.stderr.contains("suspended"))
        _ = try box.icebox(["suspend", "--grace", "0", "mapper"])
        let r = try box.icebox(["compact", "mapper", "--mode", "pageout"])
        #expect(r.status == 0, "\(r.output)")
        let line = try #require(r.stdout.split(separator: "\n").first { $0.contains("compacted") })
        // "file 66.3 MiB → 2.1 MiB": the file-backed part must fall by most of the 64 MiB.
        let numbers = line.components(separatedBy: "file ").last?.components(separatedBy: " ") ?? []
        let before = Double(numbers.first ?? "") ?? 0, after = Double(numbers.count > 3 ? numbers[3] : "") ?? 1e9
        #expect(before >= 60 && after < before / 4, "\(line)")
        #expect(try box.icebox(["resume", "mapper"]).stdout.contains("first resume after a compaction"))
        // The automatic path.
        _ = try box.icebox(["terminate", "mapper"])
        _ = try box.icebox([
            "launch", "--ready", "notify", "--ready-timeout", "60s", "--compact-after", "200ms", "auto", "--", "python3", "-c", code,
        ])
        _ = try box.icebox(["suspend", "--grace", "0", "auto"])
        try waitFor("an automatic compaction") { box.events("auto").contains { $0.kind == .compact } }
    }

    /// An app that takes an exclusive flock on `lockFile`, then says READY=1 and sleeps.
    static func lockHolder(_ lockFile: String) -> String {
        "import fcntl, os, socket, time\nf = open('\(lockFile)', 'w'); fcntl.flock(f, fcntl.LOCK_EX)\ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b'READY=1', os.environ['NOTIFY_SOCKET'])\nwhile True: time.sleep(1)"
    }

    @Test("a frozen app holding a lock another process waits on is thawed after a second")
    func lockContention() throws {
        let box = Sandbox()
        defer { box.close() }
        let lockFile = box.dir + "/lock"
        _ = FileManager.default.createFile(atPath: lockFile, contents: nil)
        let code = PolicyTests.lockHolder(lockFile)
        _ = try box.icebox(["launch", "--ready", "notify", "holder", "--", "python3", "-c", code])
        _ = try box.icebox(["suspend", "--grace", "0", "holder"])
        // Another process now waits for the lock the frozen app holds.
        let waiter = Process()
        waiter.executableURL = URL(fileURLWithPath: "/usr/bin/flock")
        waiter.arguments = [lockFile, "true"]
        try waiter.run()
        defer { if waiter.isRunning { kill(waiter.processIdentifier, SIGKILL) }; waiter.waitUntilExit() }
        try waitFor("the holder to be thawed") { try box.apps()["holder"]?.state == .active }
        #expect(box.events("holder").contains { $0.kind == .lock && $0.detail.contains("thawing") })
    }
}

import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// The daemon keeps an empty v1 freezer cgroup FROZEN while it has apps on the v1 freezer
/// (FreezerKeyHold: the kernel's freezer key then never flips under a freeze or a thaw).
/// Checked against the kernel: the cgroup is there, frozen and empty exactly while such an
/// app runs, and nothing of it is left when the apps end, the daemon stops, or a daemon
/// killed outright is followed by the next one.
@Suite(
    .enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"),
    .enabled(if: Sandbox.writableMounts.freezerV1 != nil, "the hold is for the v1 freezer; this host has no v1 freezer hierarchy"),
    .timeLimit(.minutes(5)))
struct FreezerKeyHoldTests {
    /// The `.freezer-hold-*` directories under the sandbox's v1 freezer root.
    func holds(_ box: Sandbox) -> [String] {
        guard let root = box.freezerRoot else { return [] }
        return ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).filter { $0.hasPrefix(".freezer-hold-") }
            .map { root + "/" + $0 }
    }

    @Test("held frozen and empty while an app is on the v1 freezer; gone with the last such app and with the daemon")
    func heldWhileNeeded() throws {
        let box = Sandbox()
        defer { box.close() }
        let other = try box.icebox(["launch", "--backend", "signal", "other", "--", "sleep", "1000"])
        #expect(other.status == 0, "\(other.output)")
        #expect(holds(box).isEmpty, "a hold without any app on the v1 freezer: \(holds(box))")

        let r = try box.icebox(["launch", "--backend", "cgroup1", "--grace", "0", "v1", "--", "sleep", "1000"])
        #expect(r.status == 0, "\(r.output)")
        let daemon = try #require(box.daemonPID)
        let hold = try #require(box.freezerRoot) + "/.freezer-hold-\(daemon)"
        #expect(holds(box) == [hold])
        #expect(Kernel.freezerState(hold) == "FROZEN")
        #expect(Sandbox.pids(in: hold).isEmpty)

        // The app's own freezes and thaws are as before.
        let s = try box.icebox(["suspend", "v1"])
        #expect(s.status == 0, "\(s.output)")
        #expect(Kernel.freezerState(box.freezerRoot! + "/v1") == "FROZEN")
        #expect(try box.apps()["v1"]?.state == .suspended)
        let t = try box.icebox(["resume", "v1"])
        #expect(t.status == 0, "\(t.output)")
        #expect(Kernel.freezerState(box.freezerRoot! + "/v1") == "THAWED")
        #expect(Kernel.freezerState(hold) == "FROZEN")

        _ = try box.icebox(["terminate", "v1"])
        #expect(Scenario.eventually { holds(box).isEmpty }, "the hold outlived the last app on the v1 freezer: \(holds(box))")
        #expect(try box.apps()["other"]?.state == .active)

        _ = try box.icebox(["launch", "--backend", "cgroup1", "again", "--", "sleep", "1000"])
        #expect(holds(box) == [hold])
        _ = try box.icebox(["daemon", "--stop", "--terminate-apps"])
        #expect(holds(box).isEmpty, "\(holds(box))")
    }

    @Test("a daemon killed outright leaves its hold; the next daemon removes it and holds its own for the app it adopts")
    func killedDaemon() throws {
        let box = Sandbox()
        defer { box.close() }
        _ = try box.icebox(["launch", "--backend", "cgroup1", "keep", "--", "sleep", "1000"])
        let first = try #require(box.daemonPID)
        try box.killDaemon()
        let left = try #require(box.freezerRoot) + "/.freezer-hold-\(first)"
        #expect(holds(box) == [left], "the killed daemon's hold should still be there to clean")

        let apps = try box.apps()  // a new daemon starts and adopts `keep`
        #expect(apps["keep"]?.state == .active)
        let second = try #require(box.daemonPID)
        #expect(second != first)
        #expect(holds(box) == [box.freezerRoot! + "/.freezer-hold-\(second)"], "\(box.events().map(\.detail).suffix(6))")
        #expect(box.events().contains { $0.detail.contains("removed an empty leftover cgroup \(left)") })
    }
}

import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// An app whose main process moved itself into a sub-cgroup of its own app cgroup (a service
/// manager or container runtime inside the app does that) is still the app (issue 33): the
/// freeze path accepts it, and so must a daemon that takes over after a restart, instead of
/// calling it ended and killing it. Its sub-cgroups are frozen with it and removed,
/// bottom-up, at its end.
@Suite(.enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"), .timeLimit(.minutes(5)))
struct SubCgroupAdoptionTests {
    func eventually(_ seconds: Double = 10, _ condition: () -> Bool) -> Bool {
        Scenario.eventually(seconds: seconds, condition)
    }

    /// Launches `sub` (backend `backend`), whose shell moves itself into `<cgroup>/inner` (and
    /// with cgroup1 into the v1 freezer's `<freezer>/inner` too) before it execs sleep; stops
    /// the daemon leaving it; a new daemon must adopt it; then suspend, resume, terminate.
    func mainInSubCgroup(backend: String) throws {
        let box = Sandbox("subcg\(backend)")
        defer { box.close() }
        let cgroup = try #require(box.cgroupRoot) + "/sub"
        var script = "mkdir \(cgroup)/inner && echo $$ > \(cgroup)/inner/cgroup.procs"
        let freezer = backend == "cgroup1" ? box.freezerRoot.map { $0 + "/sub" } : nil
        if let freezer { script += " && mkdir \(freezer)/inner && echo $$ > \(freezer)/inner/cgroup.procs" }
        script += " && exec sleep 1000"
        let r = try box.icebox(["launch", "--backend", backend, "--grace", "0", "sub", "--", "/bin/sh", "-c", script])
        try #require(r.status == 0, "\(r.output)")
        let before = try #require(try box.apps()["sub"])
        // Moved and exec'd.
        #expect(
            eventually {
                CgroupMembership.path(of: before.pid, mount: Sandbox.mounts.unifiedMount!) == cgroup + "/inner"
                    && ((try? String(contentsOfFile: "/proc/\(before.pid)/cmdline", encoding: .utf8)) ?? "").hasPrefix("sleep")
            }, "the app did not move itself into \(cgroup)/inner")
        if let freezer, let mount = Sandbox.mounts.freezerV1Mount {
            #expect(CgroupMembership.path(of: before.pid, controller: "freezer", mount: mount) == freezer + "/inner")
        }

        let stopped = try box.icebox(["daemon", "--stop"])
        #expect(stopped.status == 0, "\(stopped.output)")
        let after = try #require(try box.apps()["sub"])  // a new daemon
        #expect(after.state == .active && after.pid == before.pid, "\(after.state) \(after.ending ?? "")")
        #expect(Kernel.alive(before.pid), "the app was killed by the restart")
        #expect(box.events("sub").contains { $0.kind == .adopt }, "\(box.events("sub").map(\.detail))")

        // The freeze reaches it in its sub-cgroup.
        let s = try box.icebox(["suspend", "sub"])
        #expect(s.status == 0, "\(s.output)")
        if let freezer {
            #expect(Kernel.freezerState(freezer) == "FROZEN" && Kernel.freezerState(freezer + "/inner") == "FROZEN")
        } else {
            #expect(Kernel.cgroupFrozen(cgroup) && Kernel.cgroupFrozen(cgroup + "/inner"))
        }
        #expect(try box.apps()["sub"]?.state == .suspended)
        #expect(try box.icebox(["resume", "sub"]).status == 0)
        #expect(try box.apps()["sub"]?.state == .active)

        // Its end removes every sub-cgroup, deepest first.
        let t = try box.icebox(["terminate", "sub"])
        #expect(t.status == 0, "\(t.output)")
        #expect(!Kernel.alive(before.pid))
        let memoryRoot = HostFacts.discover(cgroupRootOverride: box.cgroupRoot).memoryV1Root
        for dir in [cgroup + "/inner", cgroup, freezer.map { $0 + "/inner" }, freezer, memoryRoot.map { $0 + "/sub" }].compactMap({ $0 }) {
            #expect(!FileManager.default.fileExists(atPath: dir), "\(dir) stayed")
        }
    }

    @Test("cgroup2: a main process in a sub-cgroup of its app's cgroup is re-adopted after a restart, frozen, and cleaned up")
    func cgroup2() throws { try mainInSubCgroup(backend: "cgroup2") }

    @Test(
        "cgroup1: a main process in sub-cgroups (v2 and the v1 freezer) is re-adopted after a restart, frozen, and cleaned up",
        .enabled(if: Sandbox.writableMounts.freezerV1 != nil, "no v1 freezer hierarchy"))
    func cgroup1() throws { try mainInSubCgroup(backend: "cgroup1") }
}

import Foundation
import Glibc
import Testing

/// The README's first command, `scripts/icebox demo`, runs scripts/demo with the release build:
/// here it runs with the build under test. Real processes through the whole lifecycle, in a
/// daemon, state and cgroups of the demo's own, all gone when it ends.
@Suite(
    .enabled(if: getuid() == 0, "the demo launches apps in cgroups of its own: needs root"),
    .enabled(if: ShellHarness.which("python3") != nil, "the demo's counter app is a Python program: needs python3"),
    .timeLimit(.minutes(5)))
struct DemoTests {
    /// The demo's own cgroup roots (`icebox-demo-PID`) in every cgroup mount.
    static func demoCgroups() -> [String] {
        let mounts = Sandbox.writableMounts
        return [mounts.unified, mounts.freezerV1].compactMap { $0 }.flatMap { mount in
            ((try? FileManager.default.contentsOfDirectory(atPath: mount)) ?? [])
                .filter { $0.hasPrefix("icebox-demo-") }.map { mount + "/" + $0 }
        }
    }

    @Test("the demo runs every step, the counter restores its count after its eviction, and nothing is left behind")
    func demoRunsAndCleansUp() throws {
        let tmp = Sandbox.temporaryDirectory("icebox-demo-test")
        defer { try? FileManager.default.removeItem(atPath: tmp) }
        let before = Set(Self.demoCgroups())
        var env = ProcessInfo.processInfo.environment
        env["TMPDIR"] = tmp
        for name in ["ICEBOX_RUNTIME_DIR", "ICEBOX_STATE_DIR", "ICEBOX_CGROUP_ROOT"] { env[name] = nil }

        let r = try ShellHarness.run([ShellHarness.root + "/scripts/demo", Sandbox.binary], environment: env, timeout: 120)
        #expect(r.status == 0, "\(r.output)")
        for step in ["suspend counter", "resume counter", "evict counter", "compact counter", "policy set --max-suspended 1", "log"] {
            #expect(r.stdout.contains("$ icebox \(step)"), "the demo did not run `icebox \(step)`")
        }
        // State restoration: the relaunched counter read back what it saved before its eviction.
        #expect(r.stdout.contains("relaunched after eviction: restored count"), "\(r.output)")
        #expect(r.stdout.contains("→ suspended"), "\(r.output)")
        #expect(r.stdout.contains("→ evicted"), "\(r.output)")

        // Its daemon, runtime and state directories went with it (all under TMPDIR), and its cgroups.
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? ["?"]).isEmpty)
        #expect(Set(Self.demoCgroups()) == before, "cgroups left: \(Set(Self.demoCgroups()).subtracting(before))")
    }
}

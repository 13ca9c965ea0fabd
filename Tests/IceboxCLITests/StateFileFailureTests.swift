import Foundation
import Glibc
import IceboxCore
import Testing

/// The daemon's state files when they fail it: a policy.json it cannot use, a policy it
/// cannot save, a registry record it cannot remove. Each is said (the event log, or the
/// client's error), never dropped unseen as it was.
///
/// A policy.json the daemon cannot use is said in the event log, not run on the defaults
/// unseen.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct PolicyFileProblemTests {
    @Test("a policy.json that holds no policy is said as the daemon starts, and the defaults apply")
    func unreadablePolicyIsSaid() throws {
        let box = Sandbox()
        defer { box.close() }
        #expect(mkdir(box.stateDir, 0o700) == 0 || errno == EEXIST)
        let file = box.stateDir + "/policy.json"
        try #"{"max_suspended": "#.write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o600)
        let shown = try box.icebox(["policy"])
        #expect(shown.status == 0, "\(shown.output)")
        let said = box.events().filter { $0.kind == .error && $0.detail.hasPrefix("policy: ") }.map(\.detail)
        #expect(said.count == 1, "\(said)")
        #expect(said.first?.contains("\(file) holds no policy this icebox reads") == true, "\(said)")
        #expect(said.first?.hasSuffix("; defaults used") == true, "\(said)")
    }
}

/// Whether `chattr +i` works where the sandboxes live (ext4, xfs, btrfs; not tmpfs): the
/// one way to make root's write of a file fail without making it something else.
private let immutableFilesReason: String? = {
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/chattr") else { return "no /usr/bin/chattr" }
    let dir = Sandbox.temporaryDirectory("icebox-chattr-probe")
    defer { try? FileManager.default.removeItem(atPath: dir) }  // best effort: a probe's scratch directory
    let file = dir + "/f"
    _ = FileManager.default.createFile(atPath: file, contents: nil)
    guard PolicySaveFailureTests.chattr("+i", file) else { return "chattr +i is not supported under \(dir)" }
    _ = PolicySaveFailureTests.chattr("-i", file)
    return nil
}()

@Suite(
    .enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"),
    .enabled(if: immutableFilesReason == nil, "\(immutableFilesReason ?? "")"), .timeLimit(.minutes(5)))
struct PolicySaveFailureTests {
    static func chattr(_ flag: String, _ path: String) -> Bool {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/chattr")
        p.arguments = [flag, path]
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return false }  // no chattr to run: not supported
        p.waitUntilExit()
        return p.terminationStatus == 0
    }

    @Test("a policy set the daemon cannot save is refused, and the policy in force stays the old one")
    func unsavedPolicyIsRefused() throws {
        let box = Sandbox()
        defer { box.close() }
        let file = box.stateDir + "/policy.json"
        let before = try box.icebox(["policy", "--json"])
        #expect(before.status == 0, "\(before.output)")
        try #require(FileManager.default.fileExists(atPath: file), "the daemon saves its policy as it starts")
        try #require(Self.chattr("+i", file))
        defer { _ = Self.chattr("-i", file) }
        let set = try box.icebox(["policy", "set", "--max-suspended", "2"])
        #expect(set.status != 0, "\(set.output)")
        #expect(set.output.contains("save the policy"), "\(set.output)")
        #expect(set.output.contains(file), "\(set.output)")
        let after = try box.icebox(["policy", "--json"])
        #expect(after.stdout == before.stdout, "the old policy stays in force")
    }
}

@Suite(
    .enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"),
    .enabled(if: immutableFilesReason == nil, "\(immutableFilesReason ?? "")"), .timeLimit(.minutes(5)))
struct RegistryRemovalFailureTests {
    @Test(
        "a release whose registry record cannot be removed still releases, and says so in the event log",
        .enabled(if: Sandbox.cgroupMissing == nil, "\(Sandbox.cgroupMissing ?? "")"))
    func releaseSaysAStuckRecord() throws {
        let box = Sandbox("stuckrecord")
        defer { box.close() }
        #expect(try box.icebox(["launch", "nap", "--", "sleep", "1000"]).status == 0)
        let app = try #require(try box.apps()["nap"])
        defer { kill(app.pid, SIGKILL) }  // released: no longer icebox's to end
        let cgroup = try #require(Kernel.appCgroup(app))
        let record = box.stateDir + "/registry/nap.json"
        try #require(PolicySaveFailureTests.chattr("+i", record))
        defer { _ = PolicySaveFailureTests.chattr("-i", record) }
        let release = try box.icebox(["release", "nap"])
        #expect(release.status == 0, "\(release.output)")
        // From the kernel: the process runs on, outside the app's cgroup.
        #expect(Kernel.alive(app.pid))
        let procs = (try? String(contentsOfFile: cgroup + "/cgroup.procs", encoding: .utf8)) ?? ""
        #expect(!procs.split(separator: "\n").contains(Substring(String(app.pid))), "still in \(cgroup)")
        let said = box.events("nap").filter { $0.kind == .error && $0.detail.hasPrefix("registry: ") }.map(\.detail)
        #expect(said.count == 1 && said.first?.contains(record) == true, "\(said)")
    }
}

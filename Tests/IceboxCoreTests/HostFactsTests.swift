import Glibc
import IceboxTestSupport
import Testing

@testable import IceboxCore

@Suite("HostFacts with a fake mountinfo")
struct HostFactsTests {
    static func expectError(
        _ code: ExitCode, _ body: () throws -> BackendKind,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        do {
            let kind = try body()
            Issue.record("expected an error \(code), got \(kind)", sourceLocation: sourceLocation)
        } catch let error as IceboxError {
            #expect(error.code == code, sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected an IceboxError, got \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func noCgroupsMeansTheSignalBackend() throws {
        let dir = makeTemporaryDirectory("host")
        defer { removeTree(dir) }
        writeFile(
            dir + "/mountinfo",
            """
            22 0 0:60 / / rw,relatime - overlay overlay rw
            23 22 0:62 / /proc rw,relatime - proc proc rw
            31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755

            """)
        let facts = HostFacts.discover(cgroupRootOverride: nil, mountinfo: dir + "/mountinfo")
        #expect(facts.mounts == CgroupMounts())
        #expect(facts.cgroupRoot == nil)
        #expect(!facts.cgroup2Usable)
        #expect(!facts.cgroup1Usable)
        #expect(facts.cgroupRootProblem?.contains("no cgroup2") == true)
        #expect(try facts.resolve(.auto) == .signal)
        #expect(try facts.resolve(.signal) == .signal)
        Self.expectError(.unavailable) { try facts.resolve(.cgroup2) }
        Self.expectError(.unavailable) { try facts.resolve(.cgroup1) }
        #expect(BackendChoice(rawValue: "bogus") == nil && BackendChoice(rawValue: "") == nil)
    }

    @Test func aMissingMountinfoIsLikeNoCgroups() throws {
        let facts = HostFacts.discover(cgroupRootOverride: nil, mountinfo: "/nonexistent/mountinfo")
        #expect(!facts.cgroup2Usable && !facts.cgroup1Usable)
        #expect(try facts.resolve(.auto) == .signal)
    }

    @Test func aCgroup2MountThatIsNotACgroupFilesystemIsNotUsable() throws {
        // The "cgroup2 mount" is a plain temp dir: no cgroup.procs appears in the root.
        let dir = makeTemporaryDirectory("host")
        defer { removeTree(dir) }
        mkdir(dir + "/cg2", 0o755)
        writeFile(dir + "/mountinfo", "41 31 0:38 / \(dir)/cg2 rw,relatime - cgroup2 cgroup2 rw\n")
        let facts = HostFacts.discover(cgroupRootOverride: nil, mountinfo: dir + "/mountinfo")
        #expect(facts.cgroupRoot == dir + "/cg2/icebox")
        #expect(isDirectoryOnDisk(dir + "/cg2/icebox"))
        #expect(facts.cgroupRootProblem?.contains("is not inside the cgroup2 filesystem") == true)
        #expect(!facts.cgroup2Usable)
        #expect(try facts.resolve(.auto) == .signal)
        Self.expectError(.unavailable) { try facts.resolve(.cgroup2) }
    }

    @Test func aFakeCgroup2RootWithFreezeFilesIsUsable() throws {
        let dir = makeTemporaryDirectory("host")
        defer { removeTree(dir) }
        mkdir(dir + "/cg2", 0o755)
        mkdir(dir + "/cg2/icebox", 0o755)
        writeFile(dir + "/cg2/icebox/cgroup.procs", "")
        writeFile(dir + "/cg2/icebox/cgroup.freeze", "0\n")
        writeFile(dir + "/mountinfo", "30 25 0:26 / \(dir)/cg2 rw shared:9 - cgroup2 cgroup2 rw,nsdelegate\n")
        let facts = HostFacts.discover(cgroupRootOverride: nil, mountinfo: dir + "/mountinfo")
        #expect(facts.cgroupRootProblem == nil)
        #expect(facts.cgroup2Usable)
        #expect(try facts.resolve(.auto) == .cgroup2)
        #expect(try facts.resolve(.cgroup2) == .cgroup2)
        #expect(!facts.supportsCgroupKill)
    }

    @Test func aCgroup2RootWithoutCgroupFreezeHasNoFreezer() {
        let dir = makeTemporaryDirectory("host")
        defer { removeTree(dir) }
        mkdir(dir + "/cg2", 0o755)
        mkdir(dir + "/cg2/icebox", 0o755)
        writeFile(dir + "/cg2/icebox/cgroup.procs", "")
        writeFile(dir + "/mountinfo", "30 25 0:26 / \(dir)/cg2 rw - cgroup2 cgroup2 rw\n")
        let facts = HostFacts.discover(cgroupRootOverride: nil, mountinfo: dir + "/mountinfo")
        #expect(facts.cgroupRootProblem?.contains("no cgroup v2 freezer") == true)
        #expect(!facts.cgroup2Usable)
    }

    @Test func theCgroupRootOverrideIsUsed() {
        let dir = makeTemporaryDirectory("host")
        defer { removeTree(dir) }
        mkdir(dir + "/cg2", 0o755)
        mkdir(dir + "/cg2/mine", 0o755)
        writeFile(dir + "/cg2/mine/cgroup.procs", "")
        writeFile(dir + "/mountinfo", "30 25 0:26 / \(dir)/cg2 rw - cgroup2 cgroup2 rw\n")
        let facts = HostFacts.discover(cgroupRootOverride: dir + "/cg2/mine", mountinfo: dir + "/mountinfo")
        #expect(facts.cgroupRoot == dir + "/cg2/mine")
        #expect(facts.cgroup2Usable)
    }

    @Test func aV1FreezerHierarchyMakesCgroup1TheAutoChoice() throws {
        let dir = makeTemporaryDirectory("host")
        defer { removeTree(dir) }
        mkdir(dir + "/freezer", 0o755)
        writeFile(dir + "/mountinfo", "37 31 0:34 / \(dir)/freezer rw,relatime - cgroup cgroup rw,freezer\n")
        let facts = HostFacts.discover(cgroupRootOverride: nil, mountinfo: dir + "/mountinfo")
        #expect(facts.freezerV1Root == dir + "/freezer/icebox")
        #expect(isDirectoryOnDisk(dir + "/freezer/icebox"))
        #expect(facts.cgroup1Usable)
        #expect(!facts.cgroup2Usable)
        #expect(try facts.resolve(.auto) == .cgroup1)
        #expect(try facts.resolve(.cgroup1) == .cgroup1)
        Self.expectError(.unavailable) { try facts.resolve(.cgroup2) }
    }
}

@Suite("HostFacts and --cgroup-root on every layout")
struct HostFactsRootTests {
    /// A fake v1 freezer mount (and, if asked, a fake cgroup2 one) in a temporary directory.
    static func host(withCgroup2: Bool) -> String {
        let dir = makeTemporaryDirectory("host")
        for d in ["/freezer", "/cg2", "/cg2/icebox"] { mkdir(dir + d, 0o755) }
        writeFile(dir + "/freezer/cgroup.procs", "")
        for f in ["cgroup.procs", "icebox/cgroup.procs", "icebox/cgroup.freeze"] { writeFile(dir + "/cg2/" + f, "") }
        let v2 = withCgroup2 ? "41 31 0:38 / \(dir)/cg2 rw - cgroup2 cgroup2 rw\n" : ""
        writeFile(dir + "/mountinfo", v2 + "37 31 0:34 / \(dir)/freezer rw - cgroup cgroup rw,freezer\n")
        return dir
    }

    @Test func onAV1OnlyHostTheRootGivenInTheFreezerHierarchyIsUsed() throws {
        let dir = Self.host(withCgroup2: false)
        defer { removeTree(dir) }
        let facts = HostFacts.discover(cgroupRootOverride: dir + "/freezer/mine", mountinfo: dir + "/mountinfo", createRoots: false)
        #expect(facts.cgroupRoot == nil)
        #expect(facts.freezerV1Root == dir + "/freezer/mine")
        if getuid() == 0 { #expect(try facts.resolve(.auto) == .cgroup1) }
        #expect(facts.autoBackendChoice.hasPrefix("cgroup1 (cgroup2: no cgroup2 filesystem is mounted"))
    }

    @Test func onAV1OnlyHostARootOutsideTheFreezerHierarchyIsAProblem() throws {
        let dir = Self.host(withCgroup2: false)
        defer { removeTree(dir) }
        let facts = HostFacts.discover(cgroupRootOverride: "/elsewhere/mine", mountinfo: dir + "/mountinfo", createRoots: false)
        #expect(!facts.cgroup1Usable)
        #expect(facts.freezerV1Problem == "/elsewhere/mine is not inside the v1 freezer hierarchy at \(dir)/freezer")
        // Asked for and unusable: an error that says why, never a silent fall back to signal.
        #expect(facts.explicitRootUnusable)
        #expect(facts.autoBackendChoice.hasPrefix("none: the cgroup root /elsewhere/mine cannot be used"))
        do {
            _ = try facts.resolve(.auto)
            Issue.record("auto resolved with an unusable explicit cgroup root")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.message.hasPrefix("the cgroup root /elsewhere/mine cannot be used: no cgroup2 filesystem is mounted"))
            #expect(error.hint?.contains("--backend signal") == true)
        }
        #expect(try facts.resolve(.signal) == .signal)
        // Without an explicit root, signal is the documented fall back.
        let plain = HostFacts.discover(cgroupRootOverride: nil, mountinfo: dir + "/mountinfo", createRoots: false)
        #expect(!plain.explicitRootUnusable)
    }

    /// A second cgroup2 mount (a container's writable one beside a read-only host one): a
    /// root asked for on it is judged on that mount, not refused as outside the first.
    @Test func aRootOnASecondCgroup2MountIsJudgedThere() throws {
        let dir = Self.host(withCgroup2: true)
        defer { removeTree(dir) }
        for d in ["/second", "/second/apps"] { mkdir(dir + d, 0o755) }
        for f in ["cgroup.procs", "apps/cgroup.procs", "apps/cgroup.freeze"] { writeFile(dir + "/second/" + f, "") }
        let text = try String(contentsOfFile: dir + "/mountinfo", encoding: .utf8)
        writeFile(dir + "/mountinfo", text + "42 31 0:38 /ctr \(dir)/second rw - cgroup2 cgroup2 rw\n")
        let facts = HostFacts.discover(cgroupRootOverride: dir + "/second/apps", mountinfo: dir + "/mountinfo", createRoots: false)
        #expect(facts.mounts.unifiedMount == CgroupMount(point: dir + "/second", root: "/ctr"))
        #expect(facts.cgroupRoot == dir + "/second/apps")
        #expect(facts.cgroupRootProblem == nil || getuid() != 0, "\(facts.cgroupRootProblem ?? "")")
        let first = HostFacts.discover(cgroupRootOverride: nil, mountinfo: dir + "/mountinfo", createRoots: false)
        #expect(first.mounts.unified == dir + "/cg2")
    }

    @Test func aRootInTheV1HierarchyIsNoCgroup2Root() {
        // It has a cgroup.procs like any cgroup, but it is not in the cgroup2 filesystem.
        let dir = Self.host(withCgroup2: true)
        defer { removeTree(dir) }
        let facts = HostFacts.discover(cgroupRootOverride: dir + "/freezer", mountinfo: dir + "/mountinfo", createRoots: false)
        #expect(!facts.cgroup2Usable)
        #expect(facts.cgroupRootProblem == "\(dir)/freezer is not inside the cgroup2 filesystem at \(dir)/cg2")
    }
}

@Suite("HostFacts without creating anything (icebox doctor)")
struct HostFactsReadOnlyTests {
    @Test func aMissingRootIsJudgedByItsParentAndNotCreated() throws {
        let dir = makeTemporaryDirectory("host")
        defer { removeTree(dir) }
        // A fake cgroup2 mount with one child cgroup that has the interface files, and a v1 freezer mount.
        for d in ["/cg2", "/cg2/other", "/freezer"] { mkdir(dir + d, 0o755) }
        for f in ["/cg2/cgroup.procs", "/cg2/other/cgroup.procs", "/cg2/other/cgroup.freeze", "/cg2/other/cgroup.kill"] {
            writeFile(dir + f, "")
        }
        writeFile(
            dir + "/mountinfo",
            """
            41 31 0:38 / \(dir)/cg2 rw,relatime - cgroup2 cgroup2 rw
            37 31 0:34 / \(dir)/freezer rw,relatime - cgroup cgroup rw,freezer

            """)
        let facts = HostFacts.discover(cgroupRootOverride: nil, mountinfo: dir + "/mountinfo", createRoots: false)
        #expect(facts.cgroupRoot == dir + "/cg2/icebox")
        #expect(!facts.cgroupRootExists && !facts.freezerV1RootExists)
        #expect(access(dir + "/cg2/icebox", F_OK) != 0, "the v2 root was created")
        #expect(access(dir + "/freezer/icebox", F_OK) != 0, "the v1 freezer directory was created")
        if getuid() == 0 {
            #expect(facts.cgroup2Usable, "\(facts.cgroupRootProblem ?? "")")
            #expect(facts.cgroup1Usable)
        }
        #expect(facts.supportsCgroupKill, "judged by the existing child cgroup")
        #expect(HostFacts.nearestExisting(dir + "/cg2/icebox/a/b") == dir + "/cg2")

        // The daemon's discovery still creates them.
        let created = HostFacts.discover(cgroupRootOverride: nil, mountinfo: dir + "/mountinfo")
        #expect(created.cgroupRootExists && access(dir + "/cg2/icebox", F_OK) == 0)
    }
}

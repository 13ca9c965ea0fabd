import Testing

@testable import IceboxCore

@Suite("CgroupMounts.parse")
struct CgroupMountsTests {
    /// This host's /proc/self/mountinfo (a hybrid layout), with some non-cgroup lines around.
    static let hybrid = """
        22 0 0:60 / / rw,relatime - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w
        23 22 0:62 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
        31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
        32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
        33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
        34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
        35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
        36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices
        37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
        38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
        39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
        40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
        41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
        50 22 0:70 / /tmp rw,relatime - tmpfs tmpfs rw

        """

    /// A systemd host on pure v2: optional fields before the separator.
    static let pureV2 = """
        24 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw
        25 24 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
        30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
        31 25 0:27 / /sys/fs/pstore rw,nosuid,nodev,noexec,relatime shared:10 master:2 - pstore pstore rw

        """

    @Test func hybridHostHasAllThree() {
        let m = CgroupMounts.parse(Self.hybrid)
        #expect(m.unified == "/sys/fs/cgroup/unified")
        #expect(m.freezerV1 == "/sys/fs/cgroup/freezer")
        #expect(m.memoryV1 == "/sys/fs/cgroup/memory")
        #expect(m.mode == "hybrid (cgroup v2 beside v1 controllers)")
    }

    /// A container in the host's cgroup namespace (runc's v1 layout): each hierarchy mounted
    /// with the container's cgroup as its root (field 4), escaped as the kernel writes it.
    @Test func mountRootsAreKept() {
        let text = """
            31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
            35 31 0:32 /kubepods/pod\\0401/ctr /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
            37 31 0:34 /kubepods/pod1/ctr /sys/fs/cgroup/freezer rw - cgroup cgroup rw,freezer
            41 31 0:38 /kubepods/pod1/ctr /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw
            """
        let m = CgroupMounts.parse(text)
        #expect(m.unifiedMount == CgroupMount(point: "/sys/fs/cgroup/unified", root: "/kubepods/pod1/ctr"))
        #expect(m.freezerV1Mount == CgroupMount(point: "/sys/fs/cgroup/freezer", root: "/kubepods/pod1/ctr"))
        #expect(m.memoryV1Mount == CgroupMount(point: "/sys/fs/cgroup/memory", root: "/kubepods/pod 1/ctr"))
        #expect(CgroupMounts.parse(Self.hybrid).unifiedMount == CgroupMount(point: "/sys/fs/cgroup/unified", root: "/"))
    }

    /// Every cgroup2 mount is kept, in order; the first is the default.
    @Test func everyCgroup2MountIsListed() {
        let text = """
            30 25 0:26 / /sys/fs/cgroup ro - cgroup2 cgroup2 rw
            60 25 0:26 /ctr /run/cg rw - cgroup2 cgroup2 rw
            """
        let m = CgroupMounts.parse(text)
        #expect(m.unified == "/sys/fs/cgroup")
        #expect(m.unifiedMounts == [CgroupMount(point: "/sys/fs/cgroup"), CgroupMount(point: "/run/cg", root: "/ctr")])
    }

    @Test func pureV2HostWithOptionalFields() {
        let m = CgroupMounts.parse(Self.pureV2)
        #expect(m == CgroupMounts(unified: "/sys/fs/cgroup"))
        #expect(m.mode == "pure cgroup v2")
    }

    @Test func legacyHostWithCombinedControllers() {
        let text = """
            31 23 0:28 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
            32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct,memory rw,nosuid shared:12 - cgroup cgroup rw,cpu,cpuacct,memory
            33 31 0:30 / /sys/fs/cgroup/freezer rw,nosuid shared:13 - cgroup cgroup rw,freezer
            """
        let m = CgroupMounts.parse(text)
        #expect(m.unified == nil)
        #expect(m.memoryV1 == "/sys/fs/cgroup/cpu,cpuacct,memory")
        #expect(m.freezerV1 == "/sys/fs/cgroup/freezer")
        #expect(m.mode == "legacy (cgroup v1 only)")
    }

    @Test func noCgroupsAtAll() {
        let m = CgroupMounts.parse("22 0 0:60 / / rw,relatime - overlay overlay rw\n")
        #expect(m == CgroupMounts())
        #expect(m.mode == "no cgroup filesystems mounted")
        #expect(CgroupMounts.parse("") == CgroupMounts())
    }

    @Test func escapedSpaceInAMountPointIsDecoded() {
        let text =
            #"90 22 0:80 / /mnt/my\040cgroups rw,relatime shared:40 - cgroup2 none rw"# + "\n"
            + #"91 22 0:81 / /mnt/tab\011and\134back rw - cgroup cgroup rw,freezer"#
        let m = CgroupMounts.parse(text)
        #expect(m.unified == "/mnt/my cgroups")
        #expect(m.freezerV1 == "/mnt/tab\tand\\back")
    }

    @Test func anEscapeAtTheVeryEndIsDecoded() {
        #expect(CgroupMounts.parse(#"90 22 0:80 / /mnt/x\040 rw - cgroup2 none rw"#).unified == "/mnt/x ")
    }

    @Test func theFirstCgroup2MountWins() {
        let text = """
            41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw
            99 22 0:38 / /mnt/other rw - cgroup2 cgroup2 rw
            """
        #expect(CgroupMounts.parse(text).unified == "/sys/fs/cgroup/unified")
    }

    @Test func malformedLinesAreSkipped() {
        let text = """
            garbage
            1 2 3
            41 31 0:38 / /nowhere rw - cgroup2
            42 31 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw
            """
        #expect(CgroupMounts.parse(text).unified == "/sys/fs/cgroup")
    }

    @Test func aFreezerNamedOnlyInTheMountPointIsNotAFreezer() {
        // Only the super options say which controllers a v1 hierarchy has.
        let text = "37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,pids\n"
        #expect(CgroupMounts.parse(text).freezerV1 == nil)
    }

    @Test func readOfAMissingFileIsEmpty() {
        #expect(CgroupMounts.read(path: "/nonexistent/mountinfo") == CgroupMounts())
    }

    // Layouts made with mount namespaces on a hybrid host (as HostLayoutTests does): a mount
    // made over another hides it, but mountinfo still lists the hidden one.

    @Test func cgroup2HiddenUnderATmpfsLeavesV1Only() {
        let m = CgroupMounts.parse(Self.hybrid + "63 41 0:39 / /sys/fs/cgroup/unified rw,relatime - tmpfs none rw,mode=755\n")
        #expect(m == CgroupMounts(freezerV1: "/sys/fs/cgroup/freezer", memoryV1: "/sys/fs/cgroup/memory"))
        #expect(m.mode == "legacy (cgroup v1 only)")
    }

    @Test func aTmpfsOverTheWholeTreeLeavesNoCgroups() {
        let m = CgroupMounts.parse(Self.hybrid + "63 31 0:39 / /sys/fs/cgroup rw,relatime - tmpfs none rw,mode=755\n")
        #expect(m == CgroupMounts())
        #expect(m.mode == "no cgroup filesystems mounted")
    }

    @Test func cgroup2MountedOverTheV1TreeIsPureV2() {
        let m = CgroupMounts.parse(Self.hybrid + "63 31 0:38 / /sys/fs/cgroup rw,relatime - cgroup2 none rw\n")
        #expect(m == CgroupMounts(unified: "/sys/fs/cgroup"))
        #expect(m.mode == "pure cgroup v2")
    }

    @Test func aMountOverADirectoryAboveHidesToo() {
        // A tmpfs over /sys/fs (on /sys, the cgroup tmpfs's parent) hides everything below.
        let m = CgroupMounts.parse(Self.hybrid + "63 23 0:39 / /sys rw - tmpfs none rw\n")
        #expect(m == CgroupMounts())
    }

    @Test func mountsBesideOrBelowDoNotHide() {
        // A sibling whose name shares a prefix (cpu, cpuacct), a mount inside a hierarchy, and
        // one whose parent mountinfo does not list: none of them covers the cgroup mounts.
        let text =
            Self.hybrid + """
                64 41 0:40 / /sys/fs/cgroup/unified/sub rw - tmpfs none rw
                65 31 0:41 / /sys/fs/cgroup/unifiedx rw - tmpfs none rw
                66 999 0:42 / /sys/fs/cgroup rw - tmpfs none rw

                """
        #expect(CgroupMounts.parse(text) == CgroupMounts.parse(Self.hybrid))
    }
}

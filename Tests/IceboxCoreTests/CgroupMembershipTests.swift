import Testing

@testable import IceboxCore

/// /proc/PID/cgroup read as paths under each hierarchy's mount, from text.
struct CgroupMembershipTests {
    static let hybrid = """
        12:freezer:/icebox/web
        4:cpu,cpuacct:/user.slice
        1:name=systemd:/user.slice/session-1.scope
        0::/icebox/web/sub
        """

    @Test func v2AndV1PathsUnderTheirMounts() {
        let unified = "/sys/fs/cgroup/unified"
        let mount = CgroupMount(point: unified)
        #expect(CgroupMembership.path(in: Self.hybrid, controller: nil, mount: mount) == unified + "/icebox/web/sub")
        #expect(
            CgroupMembership.path(in: Self.hybrid, controller: "freezer", mount: CgroupMount(point: "/sys/fs/cgroup/freezer"))
                == "/sys/fs/cgroup/freezer/icebox/web")
        #expect(CgroupMembership.path(in: Self.hybrid, controller: "cpuacct", mount: CgroupMount(point: "/c")) == "/c/user.slice")
        #expect(CgroupMembership.path(in: "0::/\n", controller: nil, mount: mount) == unified)
        #expect(CgroupMembership.path(in: "0::/a\n", controller: "freezer", mount: CgroupMount(point: "/f")) == nil, "no v1 freezer line")
        #expect(CgroupMembership.path(in: "", controller: nil, mount: mount) == nil)
    }

    /// A host cgroup namespace whose mounts show only the container's cgroup (runc's v1
    /// layout, `--cgroupns=host`, Kubernetes on v1 nodes): /proc/PID/cgroup names the whole
    /// path from the namespace's root, the mount shows the subtree from its root (mountinfo
    /// field 4) at its point. Joining the two without the root doubles the container's part.
    @Test func pathsMapThroughTheMountRoot() {
        let text = """
            12:freezer:/kubepods/pod1/ctr/icebox/web
            0::/kubepods/pod1/ctr/icebox/web/sub
            """
        let freezer = CgroupMount(point: "/sys/fs/cgroup/freezer", root: "/kubepods/pod1/ctr")
        let unified = CgroupMount(point: "/sys/fs/cgroup/unified", root: "/kubepods/pod1/ctr")
        #expect(CgroupMembership.path(in: text, controller: "freezer", mount: freezer) == "/sys/fs/cgroup/freezer/icebox/web")
        #expect(CgroupMembership.path(in: text, controller: nil, mount: unified) == "/sys/fs/cgroup/unified/icebox/web/sub")
        // The mount's root itself is the mount point.
        #expect(CgroupMembership.path(in: "0::/kubepods/pod1/ctr\n", controller: nil, mount: unified) == "/sys/fs/cgroup/unified")
        // Outside the root: the mount does not show it (no path, not a wrong one).
        #expect(CgroupMembership.path(in: "0::/kubepods/pod1/other\n", controller: nil, mount: unified) == nil)
        #expect(CgroupMembership.path(in: "0::/kubepods/pod1/ctrl\n", controller: nil, mount: unified) == nil, "a prefix, not a parent")
        #expect(CgroupMembership.path(in: "0::/\n", controller: nil, mount: unified) == nil)
    }

    @Test func mountDirectoriesForCgroupPaths() {
        let plain = CgroupMount(point: "/sys/fs/cgroup")
        #expect(plain.directory(ofCgroup: "/") == "/sys/fs/cgroup")
        #expect(plain.directory(ofCgroup: "/a/b") == "/sys/fs/cgroup/a/b")
        #expect(plain.directory(ofCgroup: "a") == nil, "not an absolute cgroup path")
        let sub = CgroupMount(point: "/c", root: "/x/y/")
        #expect(sub.directory(ofCgroup: "/x/y") == "/c")
        #expect(sub.directory(ofCgroup: "/x/y/z") == "/c/z")
        #expect(sub.directory(ofCgroup: "/x") == nil)
        #expect(CgroupMount(point: "/", root: "/r").directory(ofCgroup: "/r/s") == "/s")
    }

    @Test func withinMeansTheDirectoryOrBelowIt() {
        #expect(CgroupMembership.isWithin("/cg/web", "/cg/web"))
        #expect(CgroupMembership.isWithin("/cg/web/sub", "/cg/web"))
        #expect(!CgroupMembership.isWithin("/cg/webby", "/cg/web"))
        #expect(!CgroupMembership.isWithin("/cg", "/cg/web"))
    }
}

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
        #expect(CgroupMembership.path(in: Self.hybrid, controller: nil, mount: unified) == unified + "/icebox/web/sub")
        #expect(
            CgroupMembership.path(in: Self.hybrid, controller: "freezer", mount: "/sys/fs/cgroup/freezer")
                == "/sys/fs/cgroup/freezer/icebox/web")
        #expect(CgroupMembership.path(in: Self.hybrid, controller: "cpuacct", mount: "/c") == "/c/user.slice")
        #expect(CgroupMembership.path(in: "0::/\n", controller: nil, mount: unified) == unified)
        #expect(CgroupMembership.path(in: "0::/a\n", controller: "freezer", mount: "/f") == nil, "no v1 freezer line")
        #expect(CgroupMembership.path(in: "", controller: nil, mount: unified) == nil)
    }

    @Test func withinMeansTheDirectoryOrBelowIt() {
        #expect(CgroupMembership.isWithin("/cg/web", "/cg/web"))
        #expect(CgroupMembership.isWithin("/cg/web/sub", "/cg/web"))
        #expect(!CgroupMembership.isWithin("/cg/webby", "/cg/web"))
        #expect(!CgroupMembership.isWithin("/cg", "/cg/web"))
    }
}

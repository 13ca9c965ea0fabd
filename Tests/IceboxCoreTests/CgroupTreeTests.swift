import Testing

@testable import IceboxCore

/// cgroup.procs as the freeze's count reads it: one pid a line, read as bytes.
@Suite("CgroupTree.pids")
struct CgroupTreeTests {
    @Test func pidsAreOnePerLine() {
        #expect(CgroupTree.pids(in: "") == [])
        #expect(CgroupTree.pids(in: "4235\n") == [4235])
        #expect(CgroupTree.pids(in: "1\n22\n333\n") == [1, 22, 333])
        #expect(CgroupTree.pids(in: "7\n8") == [7, 8], "a last line without its newline")
        #expect(CgroupTree.pids(in: "\n\n5\n\n") == [5], "empty lines")
    }

    @Test func aLineThatIsNotAPidIsDropped() {
        #expect(CgroupTree.pids(in: "12 \n-3\nabc\n4x\n+5\n6\n") == [6])
        #expect(CgroupTree.pids(in: "2147483647\n2147483648\n99999999999\n") == [2_147_483_647], "past pid_t")
        #expect(CgroupTree.pids(in: "٣\n9\n") == [9], "digits of other scripts are not pids")
    }
}

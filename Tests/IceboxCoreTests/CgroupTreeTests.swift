import Foundation
import Glibc
import IceboxSystem
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

    /// The walk skips listing a directory whose link count says it has no subdirectory: that
    /// count must be 2 + subdirectories on cgroupfs (each hierarchy here) and on the temporary
    /// directory's filesystem, and every directory of a nested tree must be found.
    @Test(.enabled(if: CgroupTestRoots.hasV2, "\(CgroupTestRoots.v2Unavailable ?? "")"))
    func everyDirectoryIsFoundWhereLeavesAreNotListed() throws {
        let roots = CgroupTestRoots()
        defer { roots.cleanup() }
        let temporary = FileManager.default.temporaryDirectory.appendingPathComponent("icebox-tree-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        for root in [roots.v2, roots.freezerV1, roots.memoryV1, temporary].compactMap({ $0 }) {
            for dir in ["", "/a", "/a/b", "/a/b/c", "/a/d", "/e"] { try FileIO.makeDirectories(root + dir) }
            let found = CgroupTree.directoriesBottomUp(root)
            let expected = ["/a/b/c", "/a/b", "/a/d", "/a", "/e", ""].map { root + $0 }
            #expect(Set(found) == Set(expected), "\(root): \(found)")
            #expect(found.last == root && found.firstIndex(of: root + "/a/b/c")! < found.firstIndex(of: root + "/a/b")!)
            for (dir, subdirs) in [("", 2), ("/a", 2), ("/a/b", 1), ("/a/b/c", 0)] {
                var st = stat()
                #expect(lstat(root + dir, &st) == 0)
                #expect(st.st_nlink == nlink_t(2 + subdirs), "\(root + dir): link count \(st.st_nlink)")
            }
            #expect(CgroupTree.remove(root).isEmpty)
            #expect(!FileManager.default.fileExists(atPath: root))
        }
    }

    /// A confirmed freeze counts the processes of the app's cgroup with its directory held
    /// open (its link count by fstat): a sub-cgroup made after the directory was opened,
    /// and the process in it, are found all the same, and gone once the sub-cgroup is.
    @Test(.enabled(if: CgroupTestRoots.hasV2, "\(CgroupTestRoots.v2Unavailable ?? "")"))
    func aKeptDirectorySeesSubCgroupsMadeLater() throws {
        let roots = CgroupTestRoots()
        defer { roots.cleanup() }
        let root = roots.v2
        try FileIO.makeDirectories(root)
        let directory = CgroupFile(path: root, writable: false)
        defer { directory.close() }
        #expect(directory.status()?.st_nlink == 2)
        #expect(CgroupTree.processes(root, rootDirectory: directory).isEmpty)
        let sleeper = try Spawner.spawn(SpawnRequest(executable: "/bin/sleep", arguments: ["sleep", "100"], environment: [])).handle
        defer {
            _ = try? sleeper.send(SIGKILL)
            _ = try? sleeper.wait(until: Clock.monotonicNanos() + 10_000_000_000)
        }
        try FileIO.makeDirectories(root + "/sub")
        try FileIO.write(root + "/sub/cgroup.procs", "\(sleeper.pid)")
        #expect(directory.status()?.st_nlink == 3)
        #expect(CgroupTree.processes(root, rootDirectory: directory) == [sleeper.pid])
        try FileIO.write(root + "/cgroup.procs", "\(sleeper.pid)")
        #expect(rmdir(root + "/sub") == 0)
        #expect(directory.status()?.st_nlink == 2)
        #expect(CgroupTree.processes(root, rootDirectory: directory) == [sleeper.pid])
    }
}

import Foundation
import Testing

@testable import IceboxCore

/// What `icebox adopt` reads from /proc and cgroup paths, from text and from a /proc-like
/// tree a test writes: no root, no real process.
struct AdoptionCheckTests {
    /// A kworker's stat line (flags 0x04208060: PF_KTHREAD set) and a shell's (0x00400100).
    static let kworker = "7 (kworker/0:1-events) I 2 0 0 0 -1 69238880 0 0 0 0 0 0 0 0 20 0 1 0 12 0 0 18446744073709551615"
    static let shell = "4242 (my (odd) sh) S 4000 4242 4000 34816 4242 4194560 900 0 0 0 1 2 0 0 20 0 1 0 123456 0 0 0"

    @Test func flagsFieldAfterAnOddName() {
        #expect(AdoptionCheck.flags(inStatLine: Self.kworker) == 69_238_880)
        #expect(AdoptionCheck.flags(inStatLine: Self.shell) == 4_194_560)
        #expect(AdoptionCheck.flags(inStatLine: "garbage") == nil)
    }

    @Test func kernelThreadsByFlagOrByKthreaddWithoutAnExecutable() {
        #expect(AdoptionCheck.isKernelThread(statLine: Self.kworker, hasExecutable: false))
        #expect(!AdoptionCheck.isKernelThread(statLine: Self.shell, hasExecutable: true))
        // A kernel that hid the flag: a child of kthreadd (2) with no exe is one all the same.
        let hidden = "9 (x) S 2 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12 0 0 0"
        #expect(AdoptionCheck.isKernelThread(statLine: hidden, hasExecutable: false))
        #expect(!AdoptionCheck.isKernelThread(statLine: hidden, hasExecutable: true))
    }

    @Test func childrenListsAndUIDs() {
        #expect(AdoptionCheck.pids(inChildrenList: "12 34 56 ") == [12, 34, 56])
        #expect(AdoptionCheck.pids(inChildrenList: "").isEmpty)
        #expect(AdoptionCheck.pids(inChildrenList: "12 x -3 0\n") == [12])
        #expect(AdoptionCheck.realUID(inStatus: "Name:\tsh\nUid:\t1000\t1000\t1000\t1000\nGid:\t5\n") == 1000)
        #expect(AdoptionCheck.realUID(inStatus: "Name:\tsh\n") == nil)
    }

    /// Units and containers named in a cgroup path: the innermost one, named, with its path
    /// (where a delegation would be marked); the rest is free to adopt.
    @Test func foreignOwnersOfCgroupPaths() {
        let unit = AdoptionCheck.foreignOwner(ofCgroup: "/icebox-test-1/x.slice/y.service")
        #expect(unit == .init(kind: .systemdUnit, name: "y.service", path: "/icebox-test-1/x.slice/y.service"))
        let sub = AdoptionCheck.foreignOwner(ofCgroup: "/system.slice/foo.service/worker")
        #expect(sub?.name == "foo.service" && sub?.path == "/system.slice/foo.service")
        #expect(AdoptionCheck.foreignOwner(ofCgroup: "/user.slice/user-0.slice/session-3.scope")?.name == "session-3.scope")
        #expect(AdoptionCheck.foreignOwner(ofCgroup: "/system.slice/docker-1f2e.scope")?.kind == .containerRuntime)
        #expect(AdoptionCheck.foreignOwner(ofCgroup: "/docker/1f2e3d")?.kind == .containerRuntime)
        #expect(AdoptionCheck.foreignOwner(ofCgroup: "/kubepods/besteffort")?.kind == .containerRuntime)
        #expect(AdoptionCheck.foreignOwner(ofCgroup: "/") == nil)
        #expect(AdoptionCheck.foreignOwner(ofCgroup: "/icebox/web") == nil)
        #expect(AdoptionCheck.foreignOwner(ofCgroup: "/process_api/2e96") == nil)
        let refusal = AdoptionCheck.refusal(for: unit!, what: "pid 5")
        #expect(refusal.code == .permission)
        #expect(refusal.description.contains("y.service") && refusal.description.contains("Delegate=yes"))
        #expect(refusal.description.contains("systemd-run --scope -p Delegate=yes"))
    }

    /// A tree found through each thread's children list: a child forked by a second thread
    /// counts, a cycle (a pid reused while reading) ends, a vanished process is skipped.
    @Test func treeThroughChildrenLists() throws {
        let root = NSTemporaryDirectory() + "adopt-proc-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        func process(_ pid: Int, threads: [Int: String]) throws {
            for (tid, children) in threads {
                let dir = "\(root)/\(pid)/task/\(tid)"
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                try children.write(toFile: dir + "/children", atomically: false, encoding: .utf8)
            }
        }
        try process(100, threads: [100: "101 ", 105: "102 "])
        try process(101, threads: [101: "103 100 "])  // 100 again: no loop
        try process(102, threads: [102: ""])
        try process(103, threads: [103: "999 "])  // 999 is gone
        let tree = AdoptionCheck.tree(root: 100, procRoot: root)
        #expect(Set(tree) == [100, 101, 102, 103] && tree.count == 4, "\(tree)")
        #expect(AdoptionCheck.tree(root: 100, procRoot: root, limit: 2).count == 2)
        #expect(AdoptionCheck.tree(root: 4242, procRoot: root).isEmpty)
    }
}

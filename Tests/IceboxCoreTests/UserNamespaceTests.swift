import Glibc
import IceboxSystem
import Testing

@testable import IceboxCore

/// Root in a user namespace is not the host's root: /proc/self/uid_map says which it is, and
/// the advice given to it (doctor, the 77 hints) says so instead of "run as root".
struct UserNamespaceTests {
    @Test func theInitialNamespaceMapsEveryUidToItself() {
        let host = UserNamespace(uidMap: "         0          0 4294967295\n")
        #expect(host.isInitial)
        #expect(host.rootDescription == nil)
        #expect(host.hostUID(of: 1000) == 1000)
    }

    @Test func rootInAUserNamespaceIsSaidToBeOne() {
        let rootless = UserNamespace(uidMap: "         0       1000          1\n         1     100000      65536\n")
        #expect(!rootless.isInitial)
        #expect(rootless.hostUID(of: 0) == 1000)
        #expect(rootless.hostUID(of: 5) == 100_004)
        #expect(rootless.hostUID(of: 70_000) == nil)
        #expect(rootless.mapText == "0 1000 1, 1 100000 65536")
        #expect(
            rootless.rootDescription
                == "root inside a user namespace (uid_map 0 1000 1, 1 100000 65536: host uid 1000), not the host's root")
        #expect(UserNamespace(uidMap: "junk\n1 2\n").uidMap.isEmpty)
    }

    @Test func theHintTellsNamespacedRootWhatItLacks() {
        let rootless = UserNamespace(uidMap: "0 1000 1\n")
        let host = UserNamespace(uidMap: "0 0 4294967295\n")
        #expect(
            IceboxError.rootHint("point --cgroup-root at a subtree", namespace: host, euid: 0)
                == "run as root or point --cgroup-root at a subtree")
        #expect(IceboxError.rootHint("x", namespace: host, euid: 1000) == "run as root or x")
        #expect(IceboxError.rootHint("x", namespace: rootless, euid: 1000) == "run as root or x", "not root there: root is the advice")
        let told = IceboxError.rootHint("point --cgroup-root at a subtree", namespace: rootless, euid: 0)
        #expect(told.hasPrefix("root inside a user namespace (uid_map 0 1000 1: host uid 1000), not the host's root"), "\(told)")
        #expect(told.contains("delegated") && !told.contains("run as root"), "\(told)")
    }

    /// process_madvise's EPERM is the kernel's capability check (CAP_SYS_NICE), not a file
    /// permission: the hint names the capability, not root or --cgroup-root.
    @Test func compactionRefusedNamesCapSysNice() {
        let e = IceboxError("compact web", SystemError("process_madvise", path: "pid 42", errno: EPERM))
        #expect(e.code == .permission)
        #expect(e.hint?.contains("CAP_SYS_NICE") == true, "\(e.description)")
        #expect(e.hint?.contains("cgroup-root") == false, "\(e.description)")
        let other = IceboxError("suspend web", SystemError("write", path: "/sys/fs/cgroup/x/cgroup.freeze", errno: EACCES))
        #expect(other.hint?.contains("--cgroup-root") == true)
    }
}

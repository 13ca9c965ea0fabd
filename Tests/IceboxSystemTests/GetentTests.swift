import Glibc
import Testing

@testable import IceboxSystem

/// getent(1), which a static build asks for users and groups the files database lacks.
struct GetentTests {
    @Test(.enabled(if: Getent.paths.contains { access($0, X_OK) == 0 }, "getent (libc-bin) is missing"))
    func entriesByNameAndIdAndTheirAbsence() throws {
        let root = try #require(Getent.entry("passwd", "root"))
        #expect(root.prefix(4) == ["root", "x", "0", "0"])
        #expect(UserAccounts.User(entry: root) == UserAccounts.User(name: "root", uid: 0, gid: 0))
        #expect(Getent.entry("passwd", "0")?.first == "root")
        #expect(Getent.entry("group", "0")?.first == "root")
        #expect(Getent.entry("passwd", "icebox-no-such-user") == nil, "getent exits 2")
        #expect(Getent.entry("passwd", "-x") == nil, "a key that looks like an option is a key")
        #expect(Getent.initgroups("root") != nil)
        #expect(Getent.run(["no-such-database", "x"]) == nil)
    }

    @Test func malformedEntriesAreNoUser() {
        #expect(UserAccounts.User(entry: ["root", "x", "zero", "0"]) == nil)
        #expect(UserAccounts.User(entry: ["root", "x", "0"]) == nil)
        #expect(UserAccounts.User(entry: ["", "x", "0", "0"]) == nil)
        #expect(UserAccounts.User(entry: ["a", "x", "4294967296", "0"]) == nil, "past uid_t")
    }

    @Test func aDynamicBuildUsesNSSItself() {
        // The test binary is dynamically linked: NSS as configured, no getent.
        #expect(!UserAccounts.isStatic)
    }
}

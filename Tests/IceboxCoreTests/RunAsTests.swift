import Testing

@testable import IceboxCore

/// `--user USER[:GROUP]` as text: what is refused and what is taken without a lookup.
/// (The lookups themselves and the kernel's view are in RunAsUserTests.)
@Suite struct RunAsTests {
    @Test("UID:GID is taken as it is: no names, no supplementary groups")
    func numeric() throws {
        #expect(try RunAs.resolve("65534:65534") == RunAs(uid: 65534, gid: 65534))
        #expect(try RunAs.resolve("0:0") == RunAs(uid: 0, gid: 0))
        #expect(RunAs(uid: 1000, gid: 100).short == "1000:100")
        #expect(RunAs(uid: 65534, gid: 65534, groups: [65534], user: "nobody", group: "nogroup").short == "nobody:nogroup")
    }

    @Test(
        "malformed values are usage errors",
        arguments: ["", ":", ":100", "nobody:", "4294967295:0", "1:4294967295x", "-1:-1", "١٢:1"])
    func malformed(_ text: String) {
        do {
            let accepted = try RunAs.resolve(text)
            Issue.record("'\(text)' was taken as \(accepted)")
        } catch {
            #expect(error.code == .usage, "\(text): \(error)")
        }
    }

    @Test("an id is decimal ASCII below 2^32 - 1 (-1 means 'unchanged' to the kernel)")
    func ids() {
        #expect(RunAs.id("65534") == 65534)
        #expect(RunAs.id("4294967294") == 4_294_967_294)
        for bad in ["4294967295", "4294967296", "-1", "+1", " 1", "1e3", "١٢", ""] { #expect(RunAs.id(bad) == nil, "\(bad)") }
    }
}

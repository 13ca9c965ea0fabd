import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// `--user` with a user and groups that only an NSS module knows (libnss-extrausers, as
/// LDAP or sssd would be), set up for real in a mount namespace of its own: the binary under
/// test (the debug build through NSS; the static release build, which cannot load NSS
/// modules, through getent) resolves them, and a name no source knows is a usage error.
@Suite(
    .enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"),
    .enabled(
        if: ["/usr/lib/libnss_extrausers.so.2", "/usr/lib/x86_64-linux-gnu/libnss_extrausers.so.2"].contains {
            FileManager.default.fileExists(atPath: $0)
        }, "libnss-extrausers is not installed (apt-get install libnss-extrausers)"),
    .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare"), "unshare (util-linux) is missing"),
    .timeLimit(.minutes(5)))
struct UserDatabaseTests {
    @Test("a user and groups only an NSS module knows resolve as NSS says; an unknown one is exit 64")
    func extraUsers() throws {
        let box = Sandbox("nss")
        defer { box.close() }
        let extra = box.dir + "/extrausers"
        try FileManager.default.createDirectory(atPath: extra, withIntermediateDirectories: true)
        try "icebox-xu:x:3999000:3999001::/nonexistent:/usr/sbin/nologin\n".write(
            toFile: extra + "/passwd", atomically: false, encoding: .utf8)
        try "icebox-xug:x:3999001:\nicebox-xs:x:3999002:icebox-xu\n".write(toFile: extra + "/group", atomically: false, encoding: .utf8)
        let nsswitch = try String(contentsOfFile: "/etc/nsswitch.conf", encoding: .utf8).split(separator: "\n").map { line in
            line.hasPrefix("passwd:") ? "passwd: files extrausers" : line.hasPrefix("group:") ? "group: files extrausers" : String(line)
        }
        try (nsswitch.joined(separator: "\n") + "\n").write(toFile: box.dir + "/nsswitch.conf", atomically: false, encoding: .utf8)

        // In a mount namespace with that nsswitch.conf: the client and the daemon it starts.
        func inNamespace(_ args: [String]) throws -> Sandbox.Result {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
            p.arguments =
                [
                    "-m", "--propagation", "private", "sh", "-c",
                    #"mount --bind "$0" /etc/nsswitch.conf && mount --bind "$1" /var/lib/extrausers && shift && exec "$@""#,
                    box.dir + "/nsswitch.conf", extra, Sandbox.binary,
                ] + args
            p.environment = box.environment
            return try Sandbox.runToEnd(p, timeout: 30, what: "icebox \(args.joined(separator: " ")) with extrausers")
        }
        let r = try inNamespace(["launch", "--user", "icebox-xu", "--cwd", "/", "--grace", "0", "xu", "--", "sleep", "1000"])
        #expect(r.status == 0, "\(r.output)")
        let record = try #require(try box.apps()["xu"])
        try RunAsUserTests.expectConfined(record.pid, uid: 3_999_000, gid: 3_999_001, groups: [3_999_001, 3_999_002])
        #expect(record.runsAs?.user == "icebox-xu" && record.runsAs?.group == "icebox-xug", "\(String(describing: record.runsAs))")

        let unknown = try inNamespace(["launch", "--user", "icebox-no-such-user", "nope", "--", "true"])
        #expect(unknown.status == 64, "\(unknown.output)")
        #expect(unknown.stderr.contains("no user named 'icebox-no-such-user'"), "\(unknown.stderr)")
        let group = try inNamespace(["launch", "--user", "icebox-xu:icebox-no-such-group", "nope", "--", "true"])
        #expect(group.status == 64, "\(group.output)")
    }
}

import Foundation
import Glibc
import Testing

/// A program built against the icebox libraries, statically as icebox's own release is, must
/// keep what glibc and the Swift runtime give every program: `$ORIGIN` (glibc's
/// `_dl_get_origin`) and `CommandLine.arguments` (the runtime's argv). The `icebox`
/// executable replaces those symbols for a faster start (CIceboxStart); linked into a
/// library, the replacement took them from every program that used it.
@Suite(.enabled(if: LibraryBuild.unavailableReason == nil, "\(LibraryBuild.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct LibraryLinkTests {
    @Test("a static program linked with the libraries keeps $ORIGIN and CommandLine.arguments")
    func staticProgramKeepsOriginAndArguments() async throws {
        let dir = try #require(mkdtemp(strdup(NSTemporaryDirectory() + "icebox-link-XXXXXX")).map { String(cString: $0) })
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let program = #"""
            import Glibc
            import IceboxCore

            print(CommandLine.arguments.dropFirst().joined(separator: "|"))
            if let handle = dlopen("$ORIGIN/libprobe.so", RTLD_NOW) {
                print("origin: found")
                dlclose(handle)
            } else {
                print("origin: \(String(cString: dlerror()))")
            }
            print(IceboxPaths(runtimeDir: "/r", stateDir: "/s").controlSocket)  // something of the library's, run
            """#
        try "int probe(void) { return 1; }\n".write(toFile: dir + "/libprobe.c", atomically: true, encoding: .utf8)
        let cc = try LibraryBuild.run("/usr/bin/cc", ["-shared", "-fPIC", "-o", "libprobe.so", "libprobe.c"], in: dir)
        try #require(cc.status == 0, "\(cc.output)")
        try await LibraryBuild.link(program, named: "probe", in: dir)
        let probe = try LibraryBuild.run(dir + "/probe", ["one", "two words", ""], in: "/")
        #expect(probe.status == 0, "\(probe.output)")
        let lines = probe.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first == "one|two words|", "\(probe.output)")
        #expect(lines.contains("origin: found"), "\(probe.output)")
        #expect(lines.contains("/r/icebox.sock"), "\(probe.output)")
    }
}

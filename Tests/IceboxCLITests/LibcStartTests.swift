import Foundation
import Glibc
import Testing

/// Whether the release build of `binary` should have icebox's start-up: the release layout,
/// built where setup.sh links it (x86_64, glibc 2.36).
private func ownStartExpected(_ binary: String) -> Bool {
    var u = utsname()
    uname(&u)
    let machine = withUnsafeBytes(of: &u.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    var version = [CChar](repeating: 0, count: 64)
    _ = confstr(Int32(_CS_GNU_LIBC_VERSION), &version, version.count)  // "glibc 2.36"
    return machine == "x86_64" && String(decoding: version.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) == "glibc 2.36"
        && ImageFoliosTests.releaseLayout(binary)
}

/// The release build's start-up (CIceboxStart's libc_start.c): glibc's sequence without its
/// survey of the CPU, about 80 CPUID instructions that each trap to the hypervisor in a
/// virtual machine. Seen from outside with gdb: breakpoints on two functions of the survey
/// (they are in the binary, glibc's own start still uses them) are never reached by
/// `icebox --version`, and are with ICEBOX_LIBC_START=glibc, which hands the start to glibc.
/// The debug build is started by the dynamic linker, which runs the survey itself; scripts/test
/// runs this in its release pass.
@Suite(
    "the release build starts without glibc's survey of the CPU",
    .enabled(if: ShellHarness.which("gdb") != nil, "\(ShellHarness.missing("gdb"))"),
    .enabled(
        if: ownStartExpected(Sandbox.binary),
        "the binary under test is not the release build on x86_64 with glibc 2.36, where it is linked with icebox's own start (--wrap=__libc_start_main; scripts/test runs this on it)"
    ))
struct LibcStartTests {
    /// `icebox --version` under gdb, stopped at the first of the survey's functions it reaches.
    static func versionUnderGDB(_ environment: [String: String]) throws -> Sandbox.Result {
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "ICEBOX_LIBC_START")
        // gdb waits for its inferior with SIGCHLD, which the test process may have blocked (a
        // mask a spawned program inherits): python3 unblocks it and becomes gdb.
        let unblocked =
            "import os, signal, sys; signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGCHLD]); os.execvp(sys.argv[1], sys.argv[1:])"
        return try ShellHarness.run(
            [
                "python3", "-c", unblocked, "gdb", "-batch", "-nx", "-ex", "break update_active.constprop.0", "-ex",
                "break handle_intel.constprop.0", "-ex", "run",
                "--args", Sandbox.binary, "--version",
            ], environment: env.merging(environment) { $1 })
    }

    @Test("icebox --version never reaches glibc's survey of the CPU; with ICEBOX_LIBC_START=glibc it does, and both print the version")
    func surveySkipped() throws {
        let symbol = try ShellHarness.run(
            ["gdb", "-batch", "-nx", "-ex", "info address __wrap___libc_start_main", Sandbox.binary], environment: [:])
        #expect(symbol.stdout.contains("is a function at address"), "not linked with its own start: \(symbol.output)")
        let own = try Self.versionUnderGDB([:])
        #expect(
            own.stdout.contains("Breakpoint 1 at") && own.stdout.contains("Breakpoint 2 at"), "the survey is in the binary: \(own.output)")
        #expect(!own.stdout.contains("Breakpoint 1, ") && !own.stdout.contains("Breakpoint 2, "), "the survey ran: \(own.output)")
        #expect(own.stdout.contains("icebox ") && own.stdout.contains("exited normally"), "\(own.output)")

        let glibc = try Self.versionUnderGDB(["ICEBOX_LIBC_START": "glibc"])
        #expect(glibc.stdout.contains("Breakpoint 1, ") && glibc.stdout.contains("update_active"), "glibc's own start: \(glibc.output)")
        let plain = try ShellHarness.run([Sandbox.binary, "--version"], environment: ["ICEBOX_LIBC_START": "glibc"])
        #expect(plain.status == 0 && plain.stdout.hasPrefix("icebox "), "\(plain.output)")
    }
}

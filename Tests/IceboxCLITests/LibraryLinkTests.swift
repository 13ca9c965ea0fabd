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
    /// The object file of every source of the library targets (what a program that depends
    /// on IceboxCore links), by the sources the package has now: a build directory keeps the
    /// objects of files since moved to another target.
    func libraryObjects() throws -> [String] {
        var objects: [String] = []
        for target in ["IceboxCore", "IceboxSystem", "CIceboxShim"] {
            let sources = LibraryBuild.packageRoot + "/Sources/" + target
            let files = (FileManager.default.enumerator(atPath: sources)?.allObjects as? [String] ?? [])
                .filter { $0.hasSuffix(".swift") || $0.hasSuffix(".c") }
            try #require(!files.isEmpty, "no sources in \(sources)")
            for file in files.sorted() {
                let object = LibraryBuild.buildDir + "/\(target).build/" + URL(fileURLWithPath: file).lastPathComponent + ".o"
                try #require(FileManager.default.fileExists(atPath: object), "no object \(object) for \(sources)/\(file)")
                objects.append(object)
            }
        }
        return objects
    }

    func run(_ executable: String, _ args: [String], in dir: String) throws -> (status: Int32, output: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = args
        p.currentDirectoryURL = URL(fileURLWithPath: dir)
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test("a static program linked with the libraries keeps $ORIGIN and CommandLine.arguments")
    func staticProgramKeepsOriginAndArguments() throws {
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
            print(DurationText.format(1500))  // something of the library's, run
            """#
        try program.write(toFile: dir + "/probe.swift", atomically: true, encoding: .utf8)
        try "int probe(void) { return 1; }\n".write(toFile: dir + "/libprobe.c", atomically: true, encoding: .utf8)
        let cc = try run("/usr/bin/cc", ["-shared", "-fPIC", "-o", "libprobe.so", "libprobe.c"], in: dir)
        try #require(cc.status == 0, "\(cc.output)")
        let build = LibraryBuild.buildDir, root = LibraryBuild.packageRoot
        let link = try run(
            try #require(LibraryBuild.swiftc),
            [
                "-static-executable", "-I", build + "/Modules",
                "-Xcc", "-fmodule-map-file=\(build)/CIceboxShim.build/module.modulemap",
                "-Xcc", "-fmodule-map-file=\(root)/Sources/CLibcap/module.modulemap",
                "-Xcc", "-I\(root)/Sources/CIceboxShim/include", "probe.swift",
            ] + (try libraryObjects()) + ["-lcap", "-o", "probe"], in: dir)
        try #require(link.status == 0, "\(link.output)")
        let probe = try run(dir + "/probe", ["one", "two words", ""], in: "/")
        #expect(probe.status == 0, "\(probe.output)")
        let lines = probe.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first == "one|two words|", "\(probe.output)")
        #expect(lines.contains("origin: found"), "\(probe.output)")
        #expect(lines.contains("1.50 µs"), "\(probe.output)")
    }
}

/// Where the package's debug build is, and what linking against it takes.
enum LibraryBuild {
    /// The package's debug build directory (where the test bundle and the objects are).
    static var buildDir: String {
        URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? "")
            .deletingLastPathComponent().path
    }

    /// The package's root: the build directory is <root>/.build/<triple>/debug.
    static var packageRoot: String {
        var dir = URL(fileURLWithPath: buildDir)
        while dir.path != "/" && !FileManager.default.fileExists(atPath: dir.appendingPathComponent("Package.swift").path) {
            dir = dir.deletingLastPathComponent()
        }
        return dir.path
    }

    static var swiftc: String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/swiftc" }.first { access($0, X_OK) == 0 }
    }

    static var unavailableReason: String? {
        if swiftc == nil { return "swiftc is not on PATH" }
        if !FileManager.default.fileExists(atPath: buildDir + "/IceboxCore.build") {
            return "no IceboxCore objects in \(buildDir) (the tests run from another build layout)"
        }
        if access("/usr/bin/cc", X_OK) != 0 { return "no C compiler at /usr/bin/cc for the shared library $ORIGIN names" }
        return nil
    }
}

import Foundation
import Glibc
import IceboxSystem
import Testing

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

    static var swiftc: String? { onPath("swiftc") }

    /// For the clients of the protocol written in Python (Examples/Python).
    static var python3: String? { onPath("python3") }

    /// `program` as execvp finds it on this process's PATH, if it can be run.
    static func onPath(_ program: String) -> String? {
        Spawner.resolve(program, path: ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").flatMap {
            access($0, X_OK) == 0 ? $0 : nil
        }
    }

    static var unavailableReason: String? {
        if swiftc == nil { return "swiftc is not on PATH" }
        if !FileManager.default.fileExists(atPath: buildDir + "/IceboxCore.build") {
            return "no IceboxCore objects in \(buildDir) (the tests run from another build layout)"
        }
        if access("/usr/bin/cc", X_OK) != 0 { return "no C compiler at /usr/bin/cc for the shared library $ORIGIN names" }
        return nil
    }

    /// The object file of every source of the library targets (what a program that depends
    /// on IceboxCore links), by the sources the package has now: a build directory keeps the
    /// objects of files since moved to another target.
    static func libraryObjects() throws -> [String] {
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

    static func run(_ executable: String, _ args: [String], in dir: String) throws -> (status: Int32, output: String) {
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

    /// `run`, awaited on a thread of its own: a static link takes tens of seconds on a loaded
    /// machine, and a test blocked that long in the cooperative pool (two threads here) held
    /// up every async test meanwhile (a `sleep 100` app ended before its test went on).
    static func runOffPool(_ executable: String, _ args: [String], in dir: String) async throws -> (status: Int32, output: String) {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result { try run(executable, args, in: dir) })
            }.start()
        }
    }

    /// Builds `source` (Swift, importing IceboxCore) into `dir/name`, a static executable
    /// linked with the library targets' objects, as a program that depends on IceboxCore is.
    static func link(_ source: String, named name: String, in dir: String) async throws {
        try source.write(toFile: dir + "/\(name).swift", atomically: true, encoding: .utf8)
        let build = buildDir, root = packageRoot
        let link = try await runOffPool(
            try #require(swiftc),
            [
                "-static-executable", "-I", build + "/Modules",
                "-Xcc", "-fmodule-map-file=\(build)/CIceboxShim.build/module.modulemap",
                "-Xcc", "-fmodule-map-file=\(root)/Sources/CLibcap/module.modulemap",
                "-Xcc", "-I\(root)/Sources/CIceboxShim/include", "\(name).swift",
            ] + (try libraryObjects()) + ["-lcap", "-o", name], in: dir)
        try #require(link.status == 0, "\(link.output)")
    }

    /// A death test's owner: the program built in `dir`, started with `arguments` (its own
    /// path first), its output to `dir/out`, once it has printed what it made and then
    /// "ready" (30 s at most). Killed if it never gets there; the caller kills it otherwise.
    struct Owner {
        let process: SpawnedProcess
        let lines: [Substring]
        var pid: pid_t { process.handle.pid }

        /// The value of the line that starts with `key` and a space ("pid 42" → 42).
        func pid(_ key: String) -> pid_t? { lines.first { $0.hasPrefix(key + " ") }.flatMap { pid_t($0.dropFirst(key.count + 1)) } }
        /// Every `path` line's path.
        var paths: [String] { lines.filter { $0.hasPrefix("path ") }.map { String($0.dropFirst(5)) } }

        /// SIGKILL, then a wait of 5 s at most.
        func kill() {
            _ = try? process.handle.send(SIGKILL)
            _ = try? process.handle.wait(until: Clock.monotonicNanos() + 5_000_000_000)
        }
    }

    static func startOwner(_ arguments: [String], in dir: String) throws -> Owner {
        let out = dir + "/out"
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        let outFD = open(out, O_WRONLY | O_CLOEXEC)
        defer { close(outFD) }
        var request = SpawnRequest(executable: arguments[0], arguments: arguments, environment: ["PATH=/usr/bin:/bin"])
        request.stdout = outFD
        request.stderr = outFD
        let spawned = try Spawner.spawn(request)
        let text = { (try? String(contentsOfFile: out, encoding: .utf8)) ?? "" }
        let ready = Scenario.eventually(seconds: 30) { text().contains("ready\n") || SupervisorDeathTests.gone(spawned.handle.pid) }
        let owner = Owner(process: spawned, lines: text().split(separator: "\n"))
        guard ready && text().contains("ready\n") else {
            owner.kill()
            throw OwnerNotReady(output: text())
        }
        return owner
    }

    struct OwnerNotReady: Error, CustomStringConvertible {
        let output: String
        var description: String { "the owner did not get ready: \(output)" }
    }
}

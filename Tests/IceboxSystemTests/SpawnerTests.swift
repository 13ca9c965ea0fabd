import Glibc
import IceboxTestSupport
import Synchronization
import Testing

@testable import IceboxSystem

@Suite("Spawner.resolve")
struct SpawnerResolveTests {
    /// Three PATH directories: "prog" is a directory in the first, a non-executable file in
    /// the second and an executable in the third.
    struct Layout {
        let root: String
        var dirIsDir: String { root + "/d1" }
        var dirNoExec: String { root + "/d2" }
        var dirExec: String { root + "/d3" }

        init() {
            root = makeTemporaryDirectory("path")
            for d in [dirIsDir, dirNoExec, dirExec] { mkdir(d, 0o755) }
            mkdir(dirIsDir + "/prog", 0o755)
            writeFile(dirNoExec + "/prog", "#!/bin/sh\n", mode: 0o644)
            writeFile(dirExec + "/prog", "#!/bin/sh\nexit 0\n", mode: 0o755)
        }
    }

    @Test func skipsDirectoriesAndNonExecutablesForAnExecutable() {
        let l = Layout()
        defer { removeTree(l.root) }
        let path = "\(l.dirIsDir):\(l.dirNoExec):\(l.dirExec)"
        #expect(Spawner.resolve("prog", path: path) == l.dirExec + "/prog")
    }

    @Test func firstExecutableWins() {
        let l = Layout()
        defer { removeTree(l.root) }
        writeFile(l.dirIsDir + "/other", "", mode: 0o755)
        writeFile(l.dirExec + "/other", "", mode: 0o755)
        #expect(Spawner.resolve("other", path: "\(l.dirIsDir):\(l.dirExec)") == l.dirIsDir + "/other")
    }

    @Test func aNonExecutableFileIsReportedWhenNothingRuns() {
        // As bash does: found but not runnable, so the caller reports 126 rather than 127.
        let l = Layout()
        defer { removeTree(l.root) }
        #expect(Spawner.resolve("prog", path: "\(l.dirIsDir):\(l.dirNoExec)") == l.dirNoExec + "/prog")
    }

    @Test func aDirectoryAloneIsNotFound() {
        let l = Layout()
        defer { removeTree(l.root) }
        #expect(Spawner.resolve("prog", path: l.dirIsDir) == nil)
        #expect(Spawner.resolve("missing", path: "\(l.dirIsDir):\(l.dirNoExec):\(l.dirExec)") == nil)
    }

    @Test func aNameWithASlashIsUsedAsItIs() {
        #expect(Spawner.resolve("./prog", path: "/nonexistent") == "./prog")
        #expect(Spawner.resolve("/bin/does-not-exist", path: nil) == "/bin/does-not-exist")
    }

    @Test func aMissingPathUsesTheDefaultDirectories() throws {
        let sh = try #require(Spawner.resolve("sh", path: nil))
        #expect(["/usr/local/bin/sh", "/usr/bin/sh", "/bin/sh"].contains(sh))
    }

    @Test func anEmptyPathEntryMeansTheCurrentDirectory() {
        let l = Layout()
        defer { removeTree(l.root) }
        // ":<dir>" — the empty first entry is ".", which (the test's cwd) has no "prog".
        #expect(Spawner.resolve("prog", path: ":\(l.dirExec)") == l.dirExec + "/prog")
        #expect(Spawner.resolve("prog", path: "\(l.dirNoExec)::") == l.dirNoExec + "/prog")
    }
}

/// A spawn as another user whose change of identity cannot be completed: the step that
/// failed is named and the program never runs. Capabilities belong to a thread, so a
/// thread of this test gives up one of them and spawns from there (its child inherits
/// that thread's credentials), the rest of the process keeping its own.
@Suite("Spawner: another identity")
struct SpawnIdentityTests {
    static func spawnWithout(_ capability: String, marker: String) throws -> SpawnError? {
        let outcome = Mutex<SpawnError??>(nil)
        let thread = try JoinableThread {
            let keep = Set(Capabilities.allNames).subtracting([capability])
            guard (try? Capabilities.keepOnly(keep)) != nil else { return }
            var request = SpawnRequest(executable: "/bin/sh", arguments: ["sh", "-c", "touch \(marker)"], environment: [])
            request.identity = SpawnIdentity(uid: 65534, gid: 65534, groups: [])
            request.workingDirectory = "/"
            let result = Result { () throws(SpawnError) in try Spawner.spawn(request) }
            switch result {
            case .success(let spawned):
                _ = try? spawned.handle.wait(until: Clock.monotonicNanos() + 5_000_000_000)
                outcome.withLock { $0 = .some(nil) }
            case .failure(let error): outcome.withLock { $0 = .some(error) }
            }
        }
        _ = thread.join(until: Clock.monotonicNanos() + 10_000_000_000)
        return try #require(outcome.withLock { $0 }, "the thread could not drop \(capability)")
    }

    /// A directory in /tmp that uid 65534 could write its marker in, had the program run.
    static func openDirectory() -> String {
        var template = Array("/tmp/icebox-identity-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        let dir = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        chmod(dir, 0o777)
        return dir
    }

    /// Each capability the change of identity needs, and the step that fails without it.
    static let needed: [(capability: String, step: String)] = [
        ("cap_setpcap", "emptying the capability bounding set"), ("cap_setgid", "setgroups to 0 supplementary groups"),
    ]

    @Test(
        "without a capability it needs, the change of identity fails at the step that needs it",
        .enabled(if: getuid() == 0, "needs root (the capabilities to give one up)"), arguments: needed)
    func missingCapability(_ needed: (capability: String, step: String)) throws {
        let dir = Self.openDirectory()
        defer { removeTree(dir) }
        let error = try #require(try Self.spawnWithout(needed.capability, marker: dir + "/ran"))
        guard case .identityFailed(let step, let err) = error else {
            Issue.record("expected identityFailed, got \(error)")
            return
        }
        #expect(step.hasPrefix(needed.step) && err == EPERM, "\(error)")
        #expect(error.description.contains("the program was not run"))
        #expect(access(dir + "/ran", F_OK) != 0, "the program ran")
    }
}

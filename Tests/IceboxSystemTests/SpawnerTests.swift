import Glibc
import IceboxTestSupport
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

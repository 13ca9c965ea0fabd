import Glibc
import IceboxTestSupport
import Testing

@testable import IceboxCore

@Suite("IceboxPaths")
struct IceboxPathsTests {
    @Test func environmentOverridesAreHonoured() {
        let p = IceboxPaths.fromEnvironment([
            "ICEBOX_RUNTIME_DIR": "/tmp/rt", "ICEBOX_STATE_DIR": "/tmp/st",
            "XDG_RUNTIME_DIR": "/run/user/1000", "HOME": "/home/u",
        ])
        #expect(p == IceboxPaths(runtimeDir: "/tmp/rt", stateDir: "/tmp/st"))
    }

    @Test(.enabled(if: getuid() == 0, "the root defaults apply only to root"))
    func rootDefaultsWhenUnset() {
        #expect(IceboxPaths.fromEnvironment([:]) == IceboxPaths(runtimeDir: "/run/icebox", stateDir: "/var/lib/icebox"))
        // XDG variables are for ordinary users; empty overrides count as unset.
        let p = IceboxPaths.fromEnvironment([
            "XDG_RUNTIME_DIR": "/run/user/0", "XDG_STATE_HOME": "/x",
            "ICEBOX_RUNTIME_DIR": "", "ICEBOX_STATE_DIR": "",
        ])
        #expect(p == IceboxPaths(runtimeDir: "/run/icebox", stateDir: "/var/lib/icebox"))
    }

    @Test func eachOverrideIsIndependent() {
        let p = IceboxPaths.fromEnvironment(["ICEBOX_STATE_DIR": "/tmp/st"])
        #expect(p.stateDir == "/tmp/st")
        #expect(p.runtimeDir != "/tmp/st")
    }

    @Test func derivedPaths() {
        let p = IceboxPaths(runtimeDir: "/r", stateDir: "/s")
        #expect(p.controlSocket == "/r/icebox.sock")
        #expect(p.lockFile == "/r/daemon.lock")
        #expect(p.notifySocket("web") == "/r/notify/web")
        #expect(p.eventLog == "/s/events.jsonl")
        #expect(p.registryDir == "/s/registry")
        #expect(p.registryRecord("web") == "/s/registry/web.json")
        #expect(p.daemonLog == "/s/daemon.log")
        #expect(p.appLog("web") == "/s/logs/web.log")
    }

    @Test func prepareCreatesPrivateDirectories() throws {
        let dir = makeTemporaryDirectory("paths")
        defer { removeTree(dir) }
        let p = IceboxPaths(runtimeDir: dir + "/run/icebox", stateDir: dir + "/state/icebox")
        try p.prepare()
        for d in [p.runtimeDir, p.notifyDir, p.stateDir, p.appLogDir] { #expect(isDirectoryOnDisk(d), "\(d)") }
        #expect(fileMode(p.runtimeDir) == 0o700)
        #expect(fileMode(p.stateDir) == 0o700)
    }
}

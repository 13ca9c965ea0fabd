import Foundation
import Glibc
import IceboxSystem
import IceboxTestSupport
import Testing

@testable import IceboxCore

/// The CRIU probe against the real criu (scripts/criu builds it into
/// /usr/local/libexec/icebox/criu) and against fake ones: shell scripts that print an old
/// version, fail `criu check`, or fail a dump the way criu does. Serialized: each test counts
/// the processes and directories the probe leaves, and the real canary is ~0.3 s.
@Suite("CriuProbe", .serialized)
struct CriuProbeTests {
    /// The environment with no ICEBOX_CRIU: the probe finds criu as icebox would.
    static var plainEnvironment: [String: String] {
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "ICEBOX_CRIU")
        return env
    }

    /// Whether a working criu is here (probed once, uncached): the tests that dump and
    /// restore for real need one and root.
    static let working: CriuVerdict? = {
        guard getuid() == 0 else { return nil }
        let verdict = CriuProbe.run(environment: plainEnvironment, stateDir: nil)
        return verdict.works ? verdict : nil
    }()

    /// A fake `criu` in a fresh directory: a shell script whose `--version` prints
    /// `version`, whose `check` runs `check`, and whose `dump` runs `dump`; each call is
    /// appended to calls.log beside it.
    static func fakeCriu(version: String, check: String = "exit 0", dump: String = "exit 0") -> (dir: String, path: String) {
        let dir = makeTemporaryDirectory("criu")
        let script = """
            #!/bin/sh
            echo "$*" >> \(dir)/calls.log
            case "$1" in
            --version) echo "Version: \(version)" ;;
            check) \(check) ;;
            dump) \(dump) ;;
            *) exit 1 ;;
            esac
            """
        writeFile(dir + "/criu", script + "\n", mode: 0o755)
        return (dir, dir + "/criu")
    }

    static func calls(_ dir: String) -> [String] {
        ((try? FileIO.read(dir + "/calls.log")) ?? "").split(separator: "\n").map(String.init)
    }

    /// The value after `option` in a logged call ("dump --tree 123 --images-dir D ...").
    static func argument(_ option: String, in call: String) -> String? {
        let words = call.split(separator: " ").map(String.init)
        guard let index = words.firstIndex(of: option), index + 1 < words.count else { return nil }
        return words[index + 1]
    }

    @Test(
        "the probe finds the criu scripts/criu built (or the host's) and dumps and restores a canary",
        .enabled(if: working != nil, "no working criu here (>= 4.2 on Linux 6.16+), or not root (run scripts/criu as root to build one)"))
    func findsAWorkingCriu() throws {
        let state = makeTemporaryDirectory("criu-state")
        defer { removeTree(state) }
        let verdict = CriuProbe.run(environment: Self.plainEnvironment, stateDir: state, useCache: false)
        #expect(verdict.outcome == .works, "\(verdict.summary)")
        #expect(verdict.reason == nil)
        let version = try #require(verdict.version)
        #expect(CriuProbe.atLeast(version, [4, 1]), "\(version)")
        if CriuProbe.kernelRestrictsPassCred() { #expect(CriuProbe.atLeast(version, [4, 2]), "\(version)") }
        if FileIO.exists(CriuBinary.installed) {
            #expect(verdict.path == CriuBinary.installed && verdict.source == "icebox's prefix")
        }
        #expect(verdict.checkNanos != nil && verdict.dumpNanos != nil && verdict.restoreNanos != nil)
        #expect(verdict.kernel == CriuProbe.kernelRelease())
        // The verdict is kept: a file of ours, 0600, read back by the next probe.
        var st = stat()
        #expect(lstat(state + "/" + CriuProbeCache.fileName, &st) == 0)
        #expect(st.st_mode & S_IFMT == S_IFREG && st.st_mode & 0o777 == 0o600 && st.st_uid == geteuid())
        let again = CriuProbe.run(environment: Self.plainEnvironment, stateDir: state)
        #expect(again.cached && again.works && again.summary.contains("cached for kernel"), "\(again.summary)")
    }

    @Test(
        "the canary is dumped, restored with its pid as this process's child, then killed and reaped: nothing is left",
        .enabled(if: working != nil, "no working criu here (>= 4.2 on Linux 6.16+), or not root (run scripts/criu as root to build one)"))
    func canaryLeavesNothing() throws {
        let real = try #require(Self.working?.path)
        // A wrapper that logs each call and execs the real criu (so criu's parent is still
        // this process, as the restored canary's must be).
        let dir = makeTemporaryDirectory("criu-wrap")
        defer { removeTree(dir) }
        writeFile(dir + "/criu", "#!/bin/sh\necho \"$*\" >> \(dir)/calls.log\nexec \(real) \"$@\"\n", mode: 0o755)
        var env = Self.plainEnvironment
        env["ICEBOX_CRIU"] = dir + "/criu"
        let verdict = CriuProbe.run(environment: env, stateDir: nil)
        #expect(verdict.works && verdict.source == "ICEBOX_CRIU", "\(verdict.summary)")
        let calls = Self.calls(dir)
        let dump = try #require(calls.first { $0.hasPrefix("dump ") })
        let restore = try #require(calls.first { $0.hasPrefix("restore ") })
        #expect(restore.contains("--restore-sibling") && restore.contains("--restore-detached"))
        let pid = try #require(Self.argument("--tree", in: dump).flatMap { pid_t($0) })
        let images = try #require(Self.argument("--images-dir", in: dump))
        // From the kernel: no process with the canary's pid (killed and reaped: not even a
        // zombie), and its image directory is gone.
        #expect(!FileIO.exists("/proc/\(pid)"), "the canary \(pid) is still there")
        #expect(!FileIO.exists(images), "\(images) was left behind")
    }

    @Test("a criu older than the kernel needs is refused with the reason, and never asked to check")
    func oldCriuIsTooOld() {
        let fake = Self.fakeCriu(version: "3.17.1", check: "echo 'Error (criu/cr-check.c:1): fake check' >&2; exit 1")
        defer { removeTree(fake.dir) }
        let verdict = CriuProbe.run(environment: ["ICEBOX_CRIU": fake.path], stateDir: nil)
        #expect(verdict.path == fake.path && verdict.version == "3.17.1" && !verdict.works)
        if CriuProbe.kernelRestrictsPassCred() {
            #expect(verdict.outcome == .tooOld, "\(verdict.summary)")
            #expect(verdict.reason?.contains("criu 3.17.1 is older than 4.2") == true, "\(verdict.summary)")
            #expect(Self.calls(fake.dir) == ["--version"])
        } else if CriuProbe.kernelSplitsVvar() {
            #expect(verdict.outcome == .tooOld, "\(verdict.summary)")
            #expect(verdict.reason?.contains("criu 3.17.1 is older than 4.1") == true, "\(verdict.summary)")
            #expect(Self.calls(fake.dir) == ["--version"])
        } else {
            #expect(verdict.outcome == .checkFailed, "\(verdict.summary)")
        }
    }

    @Test("a criu 4.1.1 on a kernel that allows SO_PASSCRED only on unix sockets is too old, naming the change and 4.2")
    func criu411IsTooOldWherePassCredIsRestricted() {
        let fake = Self.fakeCriu(version: "4.1.1", check: "echo 'Error (x.c:1): fake check' >&2; exit 1")
        defer { removeTree(fake.dir) }
        let verdict = CriuProbe.run(environment: ["ICEBOX_CRIU": fake.path], stateDir: nil)
        #expect(verdict.version == "4.1.1" && !verdict.works, "\(verdict.summary)")
        if CriuProbe.kernelRestrictsPassCred() {
            #expect(verdict.outcome == .tooOld, "\(verdict.summary)")
            let reason = verdict.reason ?? ""
            #expect(reason.contains("criu 4.1.1 is older than 4.2, which this kernel needs"), "\(reason)")
            #expect(reason.contains("SO_PASSCRED") && reason.contains("Linux 6.16"), "\(reason)")
            #expect(reason.contains("criu >= 4.2"), "\(reason)")
            #expect(Self.calls(fake.dir) == ["--version"], "criu check ran although the version rule refused it")
        } else {
            // An older kernel: 4.1.1 is new enough, and goes on to its (failing) check.
            #expect(verdict.outcome == .checkFailed, "\(verdict.summary)")
        }
    }

    @Test("the SO_PASSCRED restriction is read from a real getsockopt: unix sockets keep the option, kernels >= 6.16 refuse it on TCP")
    func passCredRestrictionComesFromTheKernel() throws {
        // The option exists on unix sockets on every kernel: EOPNOTSUPP on an AF_INET one is
        // the 6.16 restriction, not an option this kernel lacks.
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        defer { pair.forEach { close($0) } }
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        #expect(getsockopt(pair[0], SOL_SOCKET, SO_PASSCRED, &value, &length) == 0, "errno \(errno)")
        // Mainline restricts it from 6.16 on (commit 7d8d93fdde50b): such a kernel must be
        // detected; an older one may have it backported, so nothing is asserted there.
        let release = CriuProbe.kernelRelease()
        let parts = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
        try #require(parts.count == 2, "cannot read a version from \(release)")
        if parts[0] > 6 || (parts[0] == 6 && parts[1] >= 16) {
            #expect(CriuProbe.kernelRestrictsPassCred(), "kernel \(release) lets an AF_INET socket read SO_PASSCRED")
        }
        // The detection leaves no socket behind. Other tests open and close descriptors in
        // this process meanwhile, so one call's count could differ by chance: 500 calls that
        // each leaked a socket would leave 500 more, far beyond what the others hold.
        let before = try FileIO.list("/proc/self/fd").count
        for _ in 0..<500 { _ = CriuProbe.kernelRestrictsPassCred() }
        let after = try FileIO.list("/proc/self/fd").count
        #expect(after - before < 250, "\(after - before) more descriptors after 500 detections")
    }

    @Test("the canary holds a TCP listening socket at dump time: a criu that cannot dump one fails the probe, nothing left behind")
    func canaryHoldsATCPListeningSocket() throws {
        // A fake 4.2.1 whose dump fails as criu 4.1.1 does on Linux >= 6.16 when, and only
        // when, the tree it is given holds a listening TCP socket: found from the kernel
        // (the inode of /proc/PID/fd/3 in state 0A in /proc/net/tcp).
        let fake = Self.fakeCriu(
            version: "4.2.1",
            dump: """
                while [ $# -gt 0 ]; do case "$1" in --images-dir) d=$2 ;; --tree) p=$2 ;; esac; shift; done
                inode=$(readlink /proc/$p/fd/3 | sed -n 's/^socket:\\[\\([0-9]*\\)\\]$/\\1/p')
                if [ -n "$inode" ] && awk -v i="$inode" '$4 == "0A" && $10 == i { f = 1 } END { exit !f }' /proc/net/tcp; then
                    echo "listening $inode" >> "$(dirname "$0")/seen.log"
                    echo "Error (criu/sockets.c:628): sockets: Can't get 1:16 opt: Operation not supported" > "$d/dump.log"; exit 1
                fi
                exit 0
                """)
        defer { removeTree(fake.dir) }
        let verdict = CriuProbe.run(environment: ["ICEBOX_CRIU": fake.path], stateDir: nil)
        #expect(verdict.outcome == .canaryFailed, "\(verdict.summary)")
        #expect(verdict.reason == "canary dump: Error (criu/sockets.c:628): sockets: Can't get 1:16 opt: Operation not supported")
        #expect(((try? FileIO.read(fake.dir + "/seen.log")) ?? "").hasPrefix("listening "))
        let dump = try #require(Self.calls(fake.dir).first { $0.hasPrefix("dump ") })
        let pid = try #require(Self.argument("--tree", in: dump).flatMap { pid_t($0) })
        #expect(!FileIO.exists("/proc/\(pid)"), "the canary \(pid) was left running or unreaped")
        #expect(!FileIO.exists(try #require(Self.argument("--images-dir", in: dump))))
    }

    @Test("a failing criu check gives its first Error line, found on PATH when icebox's prefix has none")
    func failingCheckGivesItsErrorLine() {
        let fake = Self.fakeCriu(
            version: "4.2",
            check: """
                echo 'Error (criu/util.c:1533): rlimit: Can'"'"'t setup RLIMIT_NOFILE for self: Operation not permitted' >&2
                echo 'Error (criu/cr-check.c:99): fake: no CONFIG_CHECKPOINT_RESTORE' >&2; exit 1
                """)
        defer { removeTree(fake.dir) }
        let verdict = CriuProbe.run(
            environment: ["PATH": fake.dir], stateDir: nil, installedPath: fake.dir + "/not-installed")
        #expect(verdict.outcome == .checkFailed && verdict.source == "PATH" && verdict.path == fake.path, "\(verdict.summary)")
        #expect(verdict.reason == "criu check: Error (criu/cr-check.c:99): fake: no CONFIG_CHECKPOINT_RESTORE")
        #expect(verdict.summary.contains("criu 4.2 at \(fake.path) (PATH): criu check: Error (criu/cr-check.c:99)"))
    }

    @Test("a check that fails without an Error line gives how criu ended")
    func failingCheckWithoutErrorLine() {
        let fake = Self.fakeCriu(version: "4.2.1", check: "echo 'something else went wrong'; exit 3")
        defer { removeTree(fake.dir) }
        let verdict = CriuProbe.run(environment: ["ICEBOX_CRIU": fake.path], stateDir: nil)
        #expect(verdict.reason == "criu check: something else went wrong (exited with status 3)", "\(verdict.summary)")
    }

    @Test("a canary dump that fails gives the Error line of criu's log; the canary is killed and reaped, its images removed")
    func failingDumpGivesTheLogLine() throws {
        // The fake dump writes a log as criu does (in --images-dir, --log-file) and fails.
        let fake = Self.fakeCriu(
            version: "4.2.1",
            dump: """
                while [ $# -gt 0 ]; do [ "$1" = --images-dir ] && d=$2; shift; done
                printf '%s\\n' 'Error (criu/util.c:1533): rlimit: RLIMIT_NOFILE' 'Error (criu/sk-unix.c:1): Can'"'"'t dump half of stream unix connection' > "$d/dump.log"; exit 1
                """)
        defer { removeTree(fake.dir) }
        let verdict = CriuProbe.run(environment: ["ICEBOX_CRIU": fake.path], stateDir: nil)
        #expect(verdict.outcome == .canaryFailed, "\(verdict.summary)")
        #expect(verdict.reason == "canary dump: Error (criu/sk-unix.c:1): Can't dump half of stream unix connection")
        let dump = try #require(Self.calls(fake.dir).first { $0.hasPrefix("dump ") })
        let pid = try #require(Self.argument("--tree", in: dump).flatMap { pid_t($0) })
        let images = try #require(Self.argument("--images-dir", in: dump))
        #expect(!FileIO.exists("/proc/\(pid)"), "the canary \(pid) was left running or unreaped")
        #expect(!FileIO.exists(images))
    }

    @Test("the verdict is cached per binary: used while the binary is unchanged, probed again once it changes")
    func cacheFollowsTheBinary() throws {
        let fake = Self.fakeCriu(version: "4.2", check: "echo 'Error (x.c:1): fake' >&2; exit 1")
        let state = makeTemporaryDirectory("criu-cache")
        defer {
            removeTree(fake.dir)
            removeTree(state)
        }
        let env = ["ICEBOX_CRIU": fake.path]
        let first = CriuProbe.run(environment: env, stateDir: state)
        #expect(!first.cached && first.outcome == .checkFailed && first.cacheProblem == nil, "\(first.summary)")
        #expect(Self.calls(fake.dir).count == 2)  // --version, check
        let second = CriuProbe.run(environment: env, stateDir: state)
        #expect(second.cached && second.outcome == .checkFailed && second.reason == first.reason)
        #expect(Self.calls(fake.dir).count == 2, "the cached verdict ran criu again")
        // Another binary in its place (a new version installed): probed again.
        let replacement = try FileIO.read(fake.path).replacingOccurrences(of: "Version: 4.2\"", with: "Version: 4.2.1\"")
        writeFile(fake.path + ".new", replacement, mode: 0o755)
        #expect(rename(fake.path + ".new", fake.path) == 0)
        let third = CriuProbe.run(environment: env, stateDir: state)
        #expect(!third.cached && third.version == "4.2.1", "\(third.summary)")
        #expect(Self.calls(fake.dir).count == 4)
        // useCache false probes anew even when the cache matches.
        let fourth = CriuProbe.run(environment: env, stateDir: state, useCache: false)
        #expect(!fourth.cached && Self.calls(fake.dir).count == 6)
    }

    @Test("a cache file for another kernel, or one that is a symbolic link, is not used")
    func cacheIsKernelBoundAndNeverFollowsLinks() throws {
        let fake = Self.fakeCriu(version: "4.2.1", check: "exit 1")
        let state = makeTemporaryDirectory("criu-cache")
        defer {
            removeTree(fake.dir)
            removeTree(state)
        }
        let binary = CriuBinary(path: fake.path, source: "ICEBOX_CRIU")
        let identity = try #require(CriuProbe.cacheIdentity(binary))
        _ = CriuProbe.run(environment: ["ICEBOX_CRIU": fake.path], stateDir: state)
        let kernel = CriuProbe.kernelRelease()
        #expect(CriuProbeCache.load(stateDir: state, kernel: kernel, binary: fake.path, identity: identity) != nil)
        #expect(CriuProbeCache.load(stateDir: state, kernel: kernel + "-other", binary: fake.path, identity: identity) == nil)
        // The file moved aside and a link put in its place: not read.
        let file = state + "/" + CriuProbeCache.fileName
        #expect(rename(file, state + "/elsewhere.json") == 0)
        #expect(symlink(state + "/elsewhere.json", file) == 0)
        #expect(CriuProbeCache.load(stateDir: state, kernel: kernel, binary: fake.path, identity: identity) == nil)
        // A state directory others may write in: neither read nor written.
        #expect(unlink(file) == 0 && rename(state + "/elsewhere.json", file) == 0)
        #expect(chmod(state, 0o777) == 0)
        #expect(CriuProbeCache.load(stateDir: state, kernel: kernel, binary: fake.path, identity: identity) == nil)
        let verdict = CriuProbe.run(environment: ["ICEBOX_CRIU": fake.path], stateDir: state)
        #expect(!verdict.cached && verdict.cacheProblem?.contains("group or others may write in it") == true, "\(verdict.summary)")
    }

    @Test("no state directory: the verdict is not kept, and none is made for it")
    func noStateDirectoryIsMade() {
        let fake = Self.fakeCriu(version: "4.2.1", check: "exit 1")
        defer { removeTree(fake.dir) }
        let state = fake.dir + "/state"
        let verdict = CriuProbe.run(environment: ["ICEBOX_CRIU": fake.path], stateDir: state)
        #expect(verdict.outcome == .checkFailed && verdict.cacheProblem == nil, "\(verdict.summary)")
        #expect(!FileIO.exists(state))
    }

    @Test("no criu anywhere, or ICEBOX_CRIU naming nothing: not found, saying where it looked")
    func notFound() {
        let empty = makeTemporaryDirectory("criu-none")
        defer { removeTree(empty) }
        let none = CriuProbe.run(environment: ["PATH": empty], stateDir: nil, installedPath: empty + "/criu")
        #expect(none.outcome == .notFound && none.path == nil)
        #expect(none.reason?.contains("ICEBOX_CRIU, \(CriuBinary.installed) or PATH") == true)
        let missing = CriuProbe.run(environment: ["ICEBOX_CRIU": empty + "/nothing"], stateDir: nil)
        #expect(missing.outcome == .notFound && missing.reason == "\(empty)/nothing is not a file")
    }

    @Test func versionsAndErrorLines() {
        #expect(CriuProbe.version(in: "Version: 4.1.1\n") == "4.1.1")
        #expect(CriuProbe.version(in: "Version: 3.17.1\nGitID: v3.17.1\n") == "3.17.1")
        #expect(CriuProbe.version(in: "criu 4.1\n") == nil)
        #expect(CriuProbe.atLeast("4.1", [4, 1]) && CriuProbe.atLeast("4.1.1", [4, 1]) && CriuProbe.atLeast("10.0", [4, 1]))
        #expect(!CriuProbe.atLeast("4.0.9", [4, 1]) && !CriuProbe.atLeast("3.17.1", [4, 1]))
        #expect(
            CriuCommand.firstError(
                in:
                    "Error (criu/util.c:1533): rlimit: Can't setup RLIMIT_NOFILE\nWarn (x)\nError (criu/cr-restore.c:1): Can't fork for PID: File exists\n"
            )
                == "Error (criu/cr-restore.c:1): Can't fork for PID: File exists")
        #expect(CriuCommand.firstError(in: "Looks good.\n") == nil)
        #expect(CriuCanary.parentPid(inStat: "123 (a) b) S 77 123 123 0") == 77)
    }
}

import Foundation
import Glibc

/// Runs things as another user (`nobody`, uid 65534) through util-linux's setpriv. That user
/// cannot reach the build's binary when the checkout sits under a directory only its owner
/// may enter (a 0700 home, a `mktemp -d` directory): execve fails with EACCES. So the binary
/// is copied into a fresh directory under /tmp (mode 0755) that everyone can reach. The
/// debug binary loads the Swift runtime from /opt/swift/usr/lib/swift/linux (its RUNPATH),
/// which is world-readable, so the copy runs as any user. `close()` removes the directory.
final class OtherUser: @unchecked Sendable {  // used by one test at a time, like Sandbox
    static let uid: uid_t = 65534
    static let setpriv = "/usr/bin/setpriv"
    static var available: Bool { getuid() == 0 && FileManager.default.isExecutableFile(atPath: setpriv) }

    /// Why this user cannot make a user namespace of its own here, or nil if it can: the
    /// kernel's limit, and Debian's and Ubuntu's switches for unprivileged ones.
    static var userNamespaceRefusal: String? {
        func value(_ path: String) -> Int? {
            (try? String(contentsOfFile: path, encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }
        if value("/proc/sys/user/max_user_namespaces") == 0 { return "user namespaces are off (user.max_user_namespaces is 0)" }
        if value("/proc/sys/kernel/unprivileged_userns_clone") == 0 {
            return "unprivileged user namespaces are off (kernel.unprivileged_userns_clone)"
        }
        if value("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == 1 {
            return "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns)"
        }
        return nil
    }

    /// The fresh 0755 directory: the binary's copy, and `home` (owned by the other user, 0700).
    let dir: String
    let binary: String
    let home: String

    init() throws {
        // /tmp itself, not $TMPDIR: TMPDIR may sit under a directory nobody cannot enter.
        var template = Array("/tmp/icebox-other-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw POSIXError(.init(rawValue: errno) ?? .EIO)
        }
        dir = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        chmod(dir, 0o755)
        binary = dir + "/icebox"
        home = dir + "/home"
        try Self.copyExecutable(Sandbox.binary, to: binary)
        mkdir(home, 0o700)
        chown(home, Self.uid, Self.uid)
        try waitUntilExecutable()
    }

    /// Copies through a descriptor opened O_CLOEXEC: a process another test forks while the
    /// copy is open inherits it only until its exec, never for its whole life.
    static func copyExecutable(_ source: String, to target: String) throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: source))
        let fd = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        defer { Glibc.close(fd) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, bytes.count - written) }
            guard n > 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
            written += n
        }
        fchmod(fd, 0o755)
    }

    /// execve refuses a file that any process has open for writing (ETXTBSY). Until the
    /// processes forked while the copy was open have exec'd (and so closed it), running the
    /// copy fails: a test once saw "Text file busy" in a full parallel run. Wait for a clean
    /// start here, at most 10 s, so that no test's first command meets it.
    private func waitUntilExecutable() throws {
        let deadline = Date().addingTimeInterval(10)
        while true {
            let r = try icebox(["--version"], environment: [:])
            if r.status == 0 { return }
            guard r.stderr.contains("Text file busy"), Date() < deadline else {
                throw POSIXError(.ETXTBSY, userInfo: [NSLocalizedDescriptionKey: "the copy of icebox will not run: \(r.stderr)"])
            }
            usleep(10_000)
        }
    }

    func close() { try? FileManager.default.removeItem(atPath: dir) }

    /// `box`'s environment with the runtime and state directories in this user's home, where
    /// it can make them (the sandbox's own are root's).
    func environment(of box: Sandbox) -> [String: String] {
        var env = box.environment
        env["ICEBOX_RUNTIME_DIR"] = home + "/run"
        env["ICEBOX_STATE_DIR"] = home + "/state"
        return env
    }

    /// A Process for `arguments` run as the other user, in `dir`, with `environment`.
    func process(_ arguments: [String], environment: [String: String]) -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.setpriv)
        p.arguments = ["--reuid=\(Self.uid)", "--regid=\(Self.uid)", "--clear-groups"] + arguments
        p.environment = environment
        p.currentDirectoryURL = URL(fileURLWithPath: dir)
        return p
    }

    /// Runs the copied icebox as the other user and waits (at most `timeout` seconds).
    func icebox(_ args: [String], environment: [String: String], timeout: Double = 30) throws -> Sandbox.Result {
        let p = process([binary] + args, environment: environment)
        return try Sandbox.runToEnd(p, timeout: timeout, what: "icebox \(args.joined(separator: " ")) as uid \(Self.uid)")
    }
}

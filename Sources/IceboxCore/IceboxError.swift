import Glibc
import IceboxSystem

/// The documented exit codes (sysexits.h where one fits, the shell's for exec failures).
public enum ExitCode: Int32, Sendable, Codable {
    case success = 0
    case failure = 1
    case usage = 64
    case unavailable = 69
    case ioError = 74  // a state file (the registry) could not be written
    case tryAgain = 75  // EX_TEMPFAIL: refused for now (the app is still launching); try again later
    case permission = 77
    case notExecutable = 126
    case notFound = 127
}

/// Every error icebox reports: one line that says what was wrong, plus what to do.
///
/// A test matches on ``reason`` (what went wrong, typed); ``code`` is the exit code the CLI
/// gives for it, which follows from the reason (``Reason/exitCode``).
///
/// ```swift
/// do {
///     try supervisor.suspend("ghost")
/// } catch let error {
///     #expect(error.reason == .noSuchApp(name: "ghost"))
/// }
/// ```
public struct IceboxError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, for a program to match on.
    public var reason: Reason
    /// One line for people: what was wrong.
    public var message: String
    /// What to do about it, if icebox knows.
    public var hint: String?

    /// The exit code the CLI exits with for this error: the reason's
    /// (``Reason/exitCode``). Setting another code makes the reason ``Reason/other(_:)``.
    public var code: ExitCode {
        get { reason.exitCode }
        set { if newValue != reason.exitCode { reason = .other(newValue) } }
    }

    /// An error known only by its exit code: the reason is the one that code always means
    /// (``ExitCode/permission``: ``Reason/permissionDenied``, ``ExitCode/usage``:
    /// ``Reason/badRequest``, ``ExitCode/ioError``: ``Reason/recordNotWritten``), else
    /// ``Reason/other(_:)``.
    public init(_ code: ExitCode, _ message: String, hint: String? = nil) {
        self.init(Reason(code: code), message, hint: hint)
    }

    /// An error with its typed reason; its exit code follows from it.
    public init(_ reason: Reason, _ message: String, hint: String? = nil) {
        self.reason = reason
        self.message = message
        self.hint = hint
    }

    public var description: String {
        guard let hint else { return message }
        return "\(message) (\(hint))"
    }

    /// A system error while doing something to an app; permission problems map to 77.
    public init(_ context: String, _ error: SystemError) {
        if error.operation == "process_madvise" && error.errno == EPERM {
            // Not a file permission: the kernel's check for advising another process.
            self.init(
                .permission, "\(context): \(error)",
                hint: "process_madvise needs CAP_SYS_NICE (and ptrace access to the app) in the daemon: "
                    + "start it with that capability, or compact with memory.reclaim (a v2 memory controller)")
        } else if error.isPermissionDenied {
            self.init(
                .permission, "\(context): \(error)",
                hint: Self.rootHint("point --cgroup-root at a subtree delegated to you; see icebox doctor"))
        } else {
            self.init(.failure, "\(context): \(error)")
        }
    }
}

extension IceboxError {
    /// "run as root or `otherwise`", except to root inside a user namespace, who is root
    /// already but not the host's: what it lacks is a subtree the host delegates.
    public static func rootHint(
        _ otherwise: String, namespace: UserNamespace = .current(), euid: UInt32 = UInt32(geteuid())
    ) -> String {
        guard euid == 0, let root = namespace.rootDescription else { return "run as root or " + otherwise }
        return "\(root): the host's cgroups need a subtree delegated to that uid; " + otherwise
    }
}

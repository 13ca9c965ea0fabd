import Glibc
import IceboxSystem

/// The documented exit codes (sysexits.h where one fits, the shell's for exec failures).
public enum ExitCode: Int32, Sendable, Codable {
    /// It worked.
    case success = 0
    /// It failed; the message says why.
    case failure = 1
    /// A bad command line or request (EX_USAGE).
    case usage = 64
    /// No daemon could be reached or started (EX_UNAVAILABLE).
    case unavailable = 69
    /// A state file (the registry) could not be written (EX_IOERR).
    case ioError = 74
    /// Refused for now (the app is still launching, or busy): try again later (EX_TEMPFAIL).
    case tryAgain = 75
    /// Permission denied (EX_NOPERM).
    case permission = 77
    /// The command was found but could not be executed (the shell's 126).
    case notExecutable = 126
    /// The command was not found (the shell's 127).
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

    /// The exit code the CLI exits with for this error, the reason's (``Reason/exitCode``).
    /// Setting another code makes the reason ``Reason/other(_:)``.
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

    /// The message, followed by the hint in parentheses.
    public var description: String { hint.map { "\(message) (\($0))" } ?? message }

    /// A system error while doing something to an app; permission problems map to 77.
    package init(_ context: String, _ error: SystemError) {
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
    package static func rootHint(
        _ otherwise: String, namespace: UserNamespace = .current(), euid: UInt32 = UInt32(geteuid())
    ) -> String {
        guard euid == 0, let root = namespace.rootDescription else { return "run as root or " + otherwise }
        return "\(root): the host's cgroups need a subtree delegated to that uid; " + otherwise
    }
}

import CIceboxShim

/// The init of an app launched with `--pid-namespace` (CIceboxStart/pid_namespace_init.c says what
/// it does): the `icebox` executable run with a hidden first argument, whose C constructor takes
/// over before Swift starts.
package enum PIDNamespaceInit {
    package static let flag = "--pid-namespace-init"

    /// The executable that carries the init: this process's own when it is `icebox` (the
    /// daemon), else `onPath` (for a program that only links the libraries, such as a
    /// Supervisor's: the `icebox` found on its PATH); nil when there is none.
    package static func executable(onPath: () -> String?) -> String? {
        icebox_executable_has_pid_namespace_init() != 0 ? Spawner.selfExecutable : onPath()
    }

    /// The init's argv for `program` (resolved) run with `command` as its argv.
    package static func arguments(program: String, command: [String]) -> [String] { ["icebox-init", flag, program] + command }
}

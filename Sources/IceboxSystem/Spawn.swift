import CIceboxShim
import Glibc

/// What to run and how: everything the child side needs, resolved in the parent.
package struct SpawnRequest: Sendable {
    package var executable: String
    package var arguments: [String]  // argv, including argv[0]
    package var environment: [String]  // KEY=VALUE
    package var workingDirectory: String?
    package var stdin: Int32 = -1
    package var stdout: Int32 = -1
    package var stderr: Int32 = -1
    package var extraFD: Int32 = -1  // becomes descriptor 3 in the child
    package var cgroupDirFD: Int32 = -1
    package var cgroupProcsFD: Int32 = -1
    package var v1ProcsFD: Int32 = -1  // a v1 cgroup.procs to join before execve
    package var v1MemoryProcsFD: Int32 = -1  // a second one (the v1 memory cgroup)
    package var newSession = true
    /// The program starts as pid 1 of a PID namespace of its own (CLONE_NEWPID; needs
    /// CAP_SYS_ADMIN): its processes' pids inside are its own, free again when CRIU restores it.
    /// With `newSession`, it leads its session inside the namespace, as a dump requires. As pid 1
    /// there it gets only the signals it handles (and SIGKILL, SIGSTOP) from outside, and its end
    /// kills every process left in the namespace.
    package var newPIDNamespace = false
    /// The soft limit on open descriptors the program starts with (0: this process's own).
    /// The daemon raises its own limit and gives apps back the one they would have had.
    package var descriptorSoftLimit: UInt64 = 0
    /// Who the program runs as, with no capability at all (nil: as this process, with what execve
    /// gives that user).
    package var identity: SpawnIdentity?

    package init(executable: String, arguments: [String], environment: [String]) {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
    }
}

/// Another user for a spawned program: the child takes these ids and drops every
/// capability (bounding, ambient, permitted, effective, inheritable) and sets no_new_privs
/// before its execve; each step is checked and a failure stops the launch.
package struct SpawnIdentity: Sendable, Equatable {
    package var uid: uid_t
    package var gid: gid_t
    package var groups: [gid_t]

    package init(uid: uid_t, gid: gid_t, groups: [gid_t]) {
        self.uid = uid
        self.gid = gid
        self.groups = groups
    }
}

package enum SpawnMethod: String, Sendable, Codable {
    case clone3IntoCgroup = "clone3(CLONE_INTO_CGROUP)"
    case clone3ThenMove = "clone3 + cgroup.procs"
    case forkThenMove = "fork + cgroup.procs"
    /// By a stand-in that joined the app's v1 cgroups before the launch (SpawnStandIn).
    case standInIntoCgroup = "clone3(CLONE_INTO_CGROUP) by a stand-in in its v1 cgroups"
    case standIn = "clone3 by a stand-in in its v1 cgroups"
}

package enum SpawnError: Error, CustomStringConvertible, Sendable {
    /// The program could not be found on PATH (exit 127, as shells do).
    case notFound(String)
    /// execve failed in the child (EACCES and ENOEXEC exit 126, as shells do).
    case execFailed(path: String, step: String, errno: Int32)
    /// The change to another user (--user) failed in the child: the program never ran.
    case identityFailed(step: String, errno: Int32)
    case system(SystemError)

    package var description: String {
        switch self {
        case .identityFailed(let step, let err):
            return "\(step) failed: \(String(cString: strerror(err))); the program was not run"
        case .notFound(let name): return "\(name): command not found"
        case .execFailed(let path, let step, let err):
            return "\(path): \(step) failed: \(String(cString: strerror(err)))"
        case .system(let e): return e.description
        }
    }

    package var shellStatus: Int32 {
        switch self {
        case .notFound: return 127
        case .execFailed(_, _, let err): return err == ENOENT ? 127 : 126
        case .identityFailed, .system: return 1
        }
    }
}

package struct SpawnedProcess {
    package var handle: ProcessHandle
    package var method: SpawnMethod
    /// When (CLOCK_MONOTONIC ns) the spawner knew the program was running: the child's
    /// execve had closed the error pipe. What a spawn's "spawn → exec" ends with; the work a
    /// spawner does after that (reaping a stand-in) is not the app's.
    package var execConfirmedNanos: UInt64
}

package enum Spawner {
    /// This program's own path (for starting the daemon).
    package static let selfExecutable: String = FileIO.readLink("/proc/self/exe") ?? "/proc/self/exe"

    /// Finds a program the way execvp does: a name with a slash is used as it is, else each
    /// directory of PATH is tried. Resolving here lets "not found" be reported before any spawn.
    package static func resolve(_ name: String, path: String?) -> String? {
        if name.contains("/") { return name }
        let dirs = (path ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":", omittingEmptySubsequences: false)
        var firstNonExecutable: String?
        for dir in dirs {
            let candidate = (dir.isEmpty ? "." : String(dir)) + "/" + name
            var st = stat()
            guard stat(candidate, &st) == 0, (st.st_mode & S_IFMT) != S_IFDIR else { continue }
            if access(candidate, X_OK) == 0 { return candidate }
            firstNonExecutable = firstNonExecutable ?? candidate
        }
        // As bash does: a file that exists but cannot be run is reported as such (126).
        return firstNonExecutable
    }

    package static func spawn(_ request: SpawnRequest) throws(SpawnError) -> SpawnedProcess {
        var result = icebox_spawn_result()
        let rc = withCRequest(request) { icebox_spawn($0, &result) }
        if rc < 0 { throw .system(SystemError("spawn", path: request.executable)) }
        return try outcome(result, of: request, confirmedAt: Clock.monotonicNanos())
    }

    /// Calls body with the request as the C layer takes it. Everything the child needs for
    /// another identity is made here: it may not allocate.
    static func withCRequest<R>(_ request: SpawnRequest, _ body: (UnsafePointer<icebox_spawn_request>) -> R) -> R {
        let identity = request.identity
        let lastCap = identity == nil ? 0 : Capabilities.lastCap
        let groups = identity?.groups ?? []
        return withCStringArray(request.arguments) { argv in
            withCStringArray(request.environment) { envp in
                request.executable.withCString { path in
                    withOptionalCString(request.workingDirectory) { cwd in
                        groups.withUnsafeBufferPointer { groupList in
                            var req = icebox_spawn_request(
                                path: path, argv: argv, envp: envp, cwd: cwd,
                                stdin_fd: request.stdin, stdout_fd: request.stdout, stderr_fd: request.stderr,
                                extra_fd: request.extraFD, cgroup_fd: request.cgroupDirFD,
                                cgroup_procs_fd: request.cgroupProcsFD, v1_procs_fd: request.v1ProcsFD,
                                v1_memory_procs_fd: request.v1MemoryProcsFD, new_session: request.newSession ? 1 : 0,
                                nofile_soft: request.descriptorSoftLimit, set_identity: identity == nil ? 0 : 1,
                                uid: identity?.uid ?? 0, gid: identity?.gid ?? 0,
                                groups: groupList.isEmpty ? nil : groupList.baseAddress, ngroups: groupList.count,
                                cap_last_cap: lastCap, new_pid_namespace: request.newPIDNamespace ? 1 : 0)
                            return body(&req)
                        }
                    }
                }
            }
        }
    }

    /// The spawned process, or the error of the step the child failed at. A failed child
    /// handed over through its pidfd (a stand-in's, CLONE_PARENT) is reaped here first.
    static func outcome(_ result: icebox_spawn_result, of request: SpawnRequest, confirmedAt: UInt64) throws(SpawnError)
        -> SpawnedProcess
    {
        if result.child_errno != 0 {
            if result.pidfd >= 0 {
                let failed = ProcessHandle(pid: result.pid, pidfd: result.pidfd)
                _ = try? failed.wait(until: Clock.monotonicNanos() &+ 2_000_000_000)  // far from wrapping: ns since boot
            }
            let step = icebox_spawn_step(rawValue: UInt32(bitPattern: result.failed_step))
            if step == ICEBOX_STEP_CGROUP {
                throw .system(SystemError("move the new process into its cgroup", errno: result.child_errno))
            }
            if let identity = request.identity, let what = identityStep(step, identity) {
                throw .identityFailed(step: what, errno: result.child_errno)
            }
            let steps = [
                ICEBOX_STEP_CHDIR: "chdir to \(request.workingDirectory ?? "")", ICEBOX_STEP_SETSID: "setsid",
                ICEBOX_STEP_DUP: "dup2", ICEBOX_STEP_EXEC: "execve",
                ICEBOX_STEP_AFFINITY: "sched_setaffinity back to the daemon's CPUs",
            ]
            throw .execFailed(path: request.executable, step: steps[step] ?? "spawn", errno: result.child_errno)
        }
        let method: SpawnMethod =
            switch UInt32(bitPattern: result.method) {
            case ICEBOX_SPAWN_CLONE3_INTO_CGROUP.rawValue: .clone3IntoCgroup
            case ICEBOX_SPAWN_CLONE3_THEN_MOVE.rawValue: .clone3ThenMove
            case ICEBOX_SPAWN_STAND_IN_INTO_CGROUP.rawValue: .standInIntoCgroup
            case ICEBOX_SPAWN_STAND_IN.rawValue: .standIn
            default: .forkThenMove
            }
        return SpawnedProcess(
            handle: ProcessHandle(pid: result.pid, pidfd: result.pidfd), method: method, execConfirmedNanos: confirmedAt)
    }

    /// What the child was doing when a step of its change of identity failed.
    static func identityStep(_ step: icebox_spawn_step, _ identity: SpawnIdentity) -> String? {
        switch step {
        case ICEBOX_STEP_SETGROUPS: return "setgroups to \(identity.groups.count) supplementary groups"
        case ICEBOX_STEP_SETGID: return "setresgid to gid \(identity.gid)"
        case ICEBOX_STEP_CAPBSET: return "emptying the capability bounding set (PR_CAPBSET_DROP)"
        case ICEBOX_STEP_AMBIENT: return "clearing the ambient capabilities"
        case ICEBOX_STEP_SETUID: return "setresuid to uid \(identity.uid)"
        case ICEBOX_STEP_CAPSET: return "emptying the permitted, effective and inheritable capabilities (capset)"
        case ICEBOX_STEP_NO_NEW_PRIVS: return "setting no_new_privs"
        case ICEBOX_STEP_VERIFY: return "checking the new ids and capabilities (something was left)"
        default: return nil
        }
    }
}

func withCStringArray<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    pointers.append(nil)
    defer { for p in pointers { free(p) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

func withOptionalCString<R>(_ s: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let s else { return body(nil) }
    return s.withCString { body($0) }
}

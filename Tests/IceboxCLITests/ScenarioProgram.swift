import Foundation
import Glibc
import Testing

/// A small C program that plays the processes of the kernel's cgroup selftests
/// (tools/testing/selftests/cgroup/test_freezer.c, test_kill.c) as an app icebox launches:
/// what Python cannot do (a parent held in vfork(), ptrace) or cannot do cheaply (a hundred
/// processes, a fork bomb). Compiled once per test run with the system's C compiler.
///
/// Every process it makes sleeps in short naps until its parent goes away, as the kernel's
/// `child_fn` does: when an app's main process is killed its children end by themselves, so
/// a failing test leaves nothing running.
enum ScenarioProgram {
    /// The compiled program, or why there is none.
    static let binary: Result<String, CompileError> = compile()

    struct CompileError: Error, CustomStringConvertible {
        var description: String
    }

    /// Why the scenarios cannot run here, or nil.
    static var unavailableReason: String? {
        // ScenarioApp finds an app's processes in its v2 cgroup, whatever the backend (the
        // cgroup1 and signal cases too): the scenarios need a cgroup2 root.
        if let why = Sandbox.cgroup2Missing { return why }
        if case .failure(let e) = binary { return e.description }
        return nil
    }

    static var path: String { (try? binary.get()) ?? "/nonexistent" }

    /// Where the program was compiled: removed when the test process exits (one directory
    /// was left in /tmp per test run).
    nonisolated(unsafe) private static var directory: String?

    private static func compile() -> Result<String, CompileError> {
        let dir = Sandbox.temporaryDirectory("icebox-scenario")
        directory = dir
        atexit { ScenarioProgram.directory.map { _ = try? FileManager.default.removeItem(atPath: $0) } }
        let source = dir + "/scenario.c", output = dir + "/scenario"
        do { try code.write(toFile: source, atomically: true, encoding: .utf8) } catch {
            return .failure(CompileError(description: "cannot write \(source): \(error)"))
        }
        let cc = Process()
        cc.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        cc.arguments = ["cc", "-O1", "-Wall", "-Werror", "-o", output, source]
        guard let r = try? Sandbox.runToEnd(cc, timeout: 60, what: "cc scenario.c") else {
            return .failure(CompileError(description: "the scenarios need a C compiler (cc) on PATH"))
        }
        guard r.status == 0 else { return .failure(CompileError(description: "cc scenario.c failed: \(r.output)")) }
        return .success(output)
    }

    /// The modes:
    /// - `idle`: naps until its parent goes away.
    /// - `spawn N`: N idle children, then idles itself (the kernel's 100 `child_fn`s).
    /// - `forkbomb N`: every process forks as fast as it can, children included, until N
    ///   processes were made in all (a counter in shared memory bounds it), then idles.
    /// - `vfork`: the parent waits in vfork() for a child that never execs nor exits.
    /// - `trace PID`: PTRACE_SEIZE and PTRACE_INTERRUPT, waits (5 s at most) for the trap and
    ///   prints `interrupted` (or `error …`); then on a line from stdin (or EOF) reads the
    ///   siginfo (PTRACE_GETSIGINFO), detaches and prints `detached`. A tracer that exits
    ///   detaches too, so a failed test leaves no traced process.
    /// - `term FILE`: writes `term` to FILE on SIGTERM, then exits 0.
    static let code = #"""
        #define _GNU_SOURCE
        #include <errno.h>
        #include <signal.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <sys/mman.h>
        #include <sys/ptrace.h>
        #include <sys/wait.h>
        #include <fcntl.h>
        #include <unistd.h>

        static void idle(void) {
            pid_t parent = getppid();
            while (getppid() == parent) usleep(1000);
            _exit(0);
        }

        static const char *term_file;
        static void on_term(int sig) {
            (void)sig;
            int fd = open(term_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0) { (void)!write(fd, "term\n", 5); close(fd); }
            _exit(0);
        }

        int main(int argc, char **argv) {
            if (argc < 2) return 64;
            const char *mode = argv[1];
            if (!strcmp(mode, "idle")) idle();
            if (!strcmp(mode, "spawn") && argc == 3) {
                int n = atoi(argv[2]);
                for (int i = 0; i < n; i++) if (fork() == 0) idle();
                idle();
            }
            if (!strcmp(mode, "forkbomb") && argc == 3) {
                int *left = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
                if (left == MAP_FAILED) return 1;
                *left = atoi(argv[2]);
                while (__atomic_sub_fetch(left, 1, __ATOMIC_SEQ_CST) >= 0) {
                    if (fork() < 0) usleep(1000);
                }
                idle();
            }
            if (!strcmp(mode, "vfork")) {
                if (vfork() == 0) for (;;) sleep(1);
                return 0;
            }
            if (!strcmp(mode, "term") && argc == 3) {
                term_file = argv[2];
                signal(SIGTERM, on_term);
                for (;;) pause();
            }
            if (!strcmp(mode, "trace") && argc == 3) {
                pid_t pid = atoi(argv[2]);
                setvbuf(stdout, NULL, _IONBF, 0);
                if (ptrace(PTRACE_SEIZE, pid, NULL, NULL)) { printf("error seize %s\n", strerror(errno)); return 1; }
                if (ptrace(PTRACE_INTERRUPT, pid, NULL, NULL)) { printf("error interrupt %s\n", strerror(errno)); return 1; }
                alarm(5);
                int status;
                if (waitpid(pid, &status, __WALL) != pid) { printf("error waitpid %s\n", strerror(errno)); return 1; }
                alarm(0);
                printf("interrupted\n");
                char line[64];
                (void)!fgets(line, sizeof line, stdin);
                siginfo_t info;
                if (ptrace(PTRACE_GETSIGINFO, pid, NULL, &info)) { printf("error getsiginfo %s\n", strerror(errno)); return 1; }
                if (ptrace(PTRACE_DETACH, pid, NULL, NULL)) { printf("error detach %s\n", strerror(errno)); return 1; }
                printf("detached\n");
                return 0;
            }
            return 64;
        }
        """#
}

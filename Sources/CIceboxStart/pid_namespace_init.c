// The init of an app launched with --pid-namespace: pid 1 of the app's own PID namespace, with the
// app its only child. The daemon's spawn child execs this executable as
//   icebox --pid-namespace-init PROGRAM ARGV0 ARGS...
// and a constructor runs it before the Swift runtime starts (Swift is never entered: no runtime, no
// copy of the daemon's memory, a few pages of RSS), so every other command pays only the one argv
// comparison below.
//
// Why an init at all: pid 1 of a PID namespace gets from outside only the signals it has a handler
// for (or blocks: they stay pending), so the notice (SIGUSR1) or a terminate's SIGTERM sent to an
// app that is pid 1 and has no handler would be lost. This init blocks the signals icebox sends and
// forwards each to the app with sigwaitinfo (no handlers, so its /proc/PID/stat shows it catching
// nothing), reaps every process that ends in the namespace (orphans are re-parented to it), and
// exits with the app's status: its exit code, or 128+N when a signal N ended it (pid 1 of a
// namespace cannot be ended by a signal from inside, its own included, so the shell convention is
// the closest it can say; tini does the same). When it exits, the kernel kills whatever is left in
// the namespace.
//
// Session: the spawn made it the leader of a new session inside the namespace (criu dumps a tree
// only if its session leader is inside it); the app stays in that session and process group (criu
// restores both).

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ICEBOX_PID_NAMESPACE_INIT_FLAG "--pid-namespace-init"

// Tells the library (CIceboxShim, through a weak reference) that this executable carries
// the init, so the daemon can exec /proc/self/exe for it.
const int icebox_start_pid_namespace_init = 1;

static const int forwarded[] = {SIGUSR1, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR2, SIGWINCH, SIGCONT};

static void say(const char *a, const char *b, const char *c) {
    const char *parts[] = {"icebox-init: ", a, b, c, "\n"};
    for (unsigned i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        size_t n = strlen(parts[i]);
        while (n > 0) {
            ssize_t w = write(2, parts[i], n);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) return;
            n -= (size_t)w;
        }
    }
}

static int run_init(char **argv, char **envp) {
    sigset_t set, old;
    sigemptyset(&set);
    for (unsigned i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++) sigaddset(&set, forwarded[i]);
    sigaddset(&set, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &set, &old) < 0) {
        say("sigprocmask: ", strerror(errno), "");
        return 1;
    }
    pid_t app = fork();
    if (app < 0) {
        say("fork: ", strerror(errno), "");
        return 1;
    }
    if (app == 0) {
        // The app starts with the signal mask the init was given, no handler to inherit.
        sigprocmask(SIG_SETMASK, &old, NULL);
        execve(argv[0], &argv[1], envp);
        int err = errno;
        say(argv[0], ": ", strerror(err));
        _exit(err == ENOENT ? 127 : 126);
    }
    for (;;) {
        siginfo_t info;
        int sig = sigwaitinfo(&set, &info);
        if (sig < 0) continue;  // EINTR (a stop and continue)
        if (sig != SIGCHLD) {
            // To the app only: the rest of the namespace is the app's to signal.
            kill(app, sig);
            continue;
        }
        int st = 0;
        pid_t who;
        while ((who = waitpid(-1, &st, WNOHANG)) > 0) {
            if (who == app) {
                // Reap what else has ended already; the kernel kills the rest as we exit.
                while (waitpid(-1, NULL, WNOHANG) > 0) {}
                return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
            }
        }
    }
}

// Priority 102: after command_line.c's argv capture (101), before any constructor of the
// Swift runtime (they have none, so run after every prioritised one).
__attribute__((constructor(102))) static void icebox_pid_namespace_init(int argc, char **argv, char **envp) {
    if (argc < 4 || argv == NULL || argv[1] == NULL || strcmp(argv[1], ICEBOX_PID_NAMESPACE_INIT_FLAG) != 0) return;
    _exit(run_init(&argv[2], envp));
}

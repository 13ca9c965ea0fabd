/* bare: the kernel's own freeze/thaw latency, with no icebox in between.
 *
 * usage: bare [-i US] cgroup2|cgroup1|signal PATH N
 *        bare [-i US] once cgroup2|cgroup1|signal freeze|thaw PATH
 *        bare [-i US] settle PATH
 *        bare spawn PATH|- PROGRAM [ARG...]
 *
 * Does N freeze/thaw pairs on an existing target and prints one line per operation,
 * "freeze <ns>" and "thaw <ns>", each timed with CLOCK_MONOTONIC from the request to the
 * kernel's confirmation:
 *
 *   cgroup2  PATH is a cgroup v2 directory. Freeze: write "1" to PATH/cgroup.freeze, then
 *            wait until PATH/cgroup.events says "frozen 1" (poll POLLPRI on the open file and
 *            re-read it after a short wait anyway: the kernel rate-limits the POLLPRI
 *            notification to one per 10 ms). Thaw: write "0", wait for "frozen 0".
 *   cgroup1  PATH is a v1 freezer directory. Freeze: write FROZEN to PATH/freezer.state and
 *            read it back until it says FROZEN. Thaw: write THAWED and read it back until it
 *            says THAWED.
 *   signal   PATH is a cgroup directory (or a cgroup.procs file) listing the processes.
 *            Freeze: SIGSTOP every listed process, then read /proc/PID/task/TID/stat until
 *            every thread is in state T (a thread seen stopped is not read again, and a pass
 *            ends at the first thread still running). Thaw: SIGCONT every process, then read
 *            until no thread is in state T.
 *
 * once does one freeze or one thaw, as above, and exits: the C one-shot a script would exec
 * per operation (the benchmark times the whole process, start-up included). Prints
 * "freeze <ns>" or "thaw <ns>", the operation alone.
 *
 * settle (not timed as a result; a helper for the benchmark) waits until every thread of the
 * processes in PATH/cgroup.procs has run since it was thawed: its CPU time (schedstat) grows,
 * or it sleeps somewhere other than in a freezer or a stop. A thawed task counts as frozen
 * until it runs, and a freeze asked for before then completes at once: without settling, a
 * freeze right after a thaw measures nothing. Prints "settle <ns>".
 *
 * spawn (the baseline of a launch) makes the cgroup v2 directory PATH, starts PROGRAM in it
 * with clone3(CLONE_INTO_CGROUP) (PATH "-": no cgroup, a plain clone3), and times from the
 * clone to the end of its execve (a close-on-exec pipe reaches end of file): the kernel's
 * own spawn → exec, as icebox's spawn event measures it, after one untimed spawn to warm up.
 * Prints "spawn <ns>", kills and reaps the program, removes PATH.
 *
 * After each thaw the N-pair loop settles (as above) before the next freeze, untimed, and
 * prints "settle <ns>" too.
 *
 * Between re-reads bare waits US microseconds (default 20), or 5% of the time elapsed, or 4
 * times the cost of the last check, whichever is longest: its figure is within ~5% (+ US) of
 * the kernel's, and its own re-reading leaves the CPU to the tasks that must run to freeze.
 * A freeze that is not confirmed within 30 s is rolled back (thawed) and bare exits 1.
 * Compile: gcc -O2 -o bare bare.c
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long interval_us = 20;
static const uint64_t deadline_ns = 30ull * 1000000000ull;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, const char *path) {
    fprintf(stderr, "bare: %s %s: %s\n", what, path ? path : "", strerror(errno));
    exit(1);
}

/* The wait before the next re-read: interval_us, or 5% of the time elapsed since the request,
   or 4 times what the last check cost, whichever is longest. bare's figure is then within about
   5% (+ interval_us) of the moment the kernel was done, and the re-reading never takes more than
   a fraction of a CPU from the tasks that must run to freeze (on 2 cores that matters). */
static uint64_t next_wait(uint64_t start, uint64_t check_cost) {
    uint64_t now = now_ns(), wait = (uint64_t)interval_us * 1000;
    if ((now - start) / 20 > wait) wait = (now - start) / 20;
    if (check_cost * 4 > wait) wait = check_cost * 4;
    return wait;
}

static void nap(uint64_t ns) {
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    nanosleep(&ts, NULL);
}

static int open_or_die(const char *path, int flags) {
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0) die("open", path);
    return fd;
}

static void write_or_die(int fd, const char *text, const char *path) {
    if (pwrite(fd, text, strlen(text), 0) < 0) die("write", path);
}

/* Reads the whole file at offset 0 (kernfs regenerates it on every read from 0). */
static ssize_t reread(int fd, char *buf, size_t size, const char *path) {
    ssize_t n = pread(fd, buf, size - 1, 0);
    if (n < 0) die("read", path);
    buf[n] = 0;
    return n;
}

/* ---- cgroup v2 ---------------------------------------------------------------------- */

static int events_frozen(int fd, const char *path) {
    char buf[256];
    reread(fd, buf, sizeof buf, path);
    char *p = strstr(buf, "frozen ");
    return p && p[7] == '1';
}

static uint64_t cg2_op(int freeze_fd, int events_fd, const char *fpath, const char *epath, int freeze) {
    uint64_t start = now_ns();
    write_or_die(freeze_fd, freeze ? "1" : "0", fpath);
    for (;;) {
        uint64_t t = now_ns();
        if (events_frozen(events_fd, epath) == freeze) return now_ns() - start;
        uint64_t cost = now_ns() - t;
        if (now_ns() - start > deadline_ns) {
            if (freeze) write_or_die(freeze_fd, "0", fpath);
            fprintf(stderr, "bare: %s not confirmed after 30 s\n", freeze ? "freeze" : "thaw");
            exit(1);
        }
        /* the read above re-armed the notification: POLLPRI means a change since */
        struct pollfd p = {.fd = events_fd, .events = POLLPRI};
        uint64_t wait = next_wait(start, cost);
        struct timespec ts = {(time_t)(wait / 1000000000ull), (long)(wait % 1000000000ull)};
        ppoll(&p, 1, &ts, NULL);
    }
}

/* ---- cgroup v1 freezer -------------------------------------------------------------- */

static uint64_t cg1_op(int state_fd, const char *path, int freeze) {
    const char *want = freeze ? "FROZEN" : "THAWED";
    char buf[64];
    uint64_t start = now_ns();
    write_or_die(state_fd, want, path);
    for (;;) {
        uint64_t t = now_ns();
        reread(state_fd, buf, sizeof buf, path);
        if (strncmp(buf, want, strlen(want)) == 0) return now_ns() - start;
        if (now_ns() - start > deadline_ns) {
            if (freeze) write_or_die(state_fd, "THAWED", path);
            fprintf(stderr, "bare: v1 state still %s after 30 s\n", buf);
            exit(1);
        }
        nap(next_wait(start, now_ns() - t));
    }
}

/* ---- SIGSTOP / SIGCONT -------------------------------------------------------------- */

struct task { int pid, tid; };
static struct task *tasks;
static size_t ntasks, captasks;

static int read_pids(const char *procs, int **out) {
    int fd = open_or_die(procs, O_RDONLY);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (len + 4096 > cap) buf = realloc(buf, cap *= 2);
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n < 0) die("read", procs);
        if (n == 0) break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = 0;
    int count = 0, capp = 64;
    int *pids = malloc(sizeof(int) * capp);
    for (char *s = strtok(buf, "\n"); s; s = strtok(NULL, "\n")) {
        if (count == capp) pids = realloc(pids, sizeof(int) * (capp *= 2));
        pids[count++] = atoi(s);
    }
    free(buf);
    *out = pids;
    return count;
}

/* Thread state letter from /proc/PID/task/TID/stat (after the last ')'), 0 if gone. */
static char thread_state(int pid, int tid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", pid, tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : 0;
}

static void list_tasks(const int *pids, int npids) {
    ntasks = 0;
    for (int i = 0; i < npids; i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/task", pids[i]);
        DIR *d = opendir(path);
        if (!d) continue;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
            if (ntasks == captasks) tasks = realloc(tasks, sizeof *tasks * (captasks = captasks ? captasks * 2 : 1024));
            tasks[ntasks++] = (struct task){pids[i], atoi(e->d_name)};
        }
        closedir(d);
    }
}

static int is_stopped(char st) { return st == 'T' || st == 't'; }

static uint64_t signal_op(const char *procs, int freeze) {
    uint64_t start = now_ns();
    int *pids;
    int npids = read_pids(procs, &pids);
    if (npids == 0) { fprintf(stderr, "bare: %s lists no process\n", procs); exit(1); }
    for (int i = 0; i < npids; i++) kill(pids[i], freeze ? SIGSTOP : SIGCONT);
    list_tasks(pids, npids);
    /* tasks[0..first) are confirmed. A pass goes on from the first thread not yet confirmed and
       ends at the next one that is still not: every thread is read about once after it is
       done, and a pass that finds the op unfinished costs one read, not one per thread. */
    size_t first = 0;
    for (;;) {
        uint64_t t = now_ns();
        while (first < ntasks) {
            char st = thread_state(tasks[first].pid, tasks[first].tid);
            if (!(st == 0 || st == 'Z' || st == 'X' || (freeze ? is_stopped(st) : !is_stopped(st)))) break;
            first++;
        }
        if (first == ntasks) break;
        if (now_ns() - start > deadline_ns) {
            if (freeze) for (int i = 0; i < npids; i++) kill(pids[i], SIGCONT);
            fprintf(stderr, "bare: %zu threads not %s after 30 s\n", ntasks - first, freeze ? "stopped" : "continued");
            exit(1);
        }
        nap(next_wait(start, now_ns() - t));
    }
    uint64_t took = now_ns() - start;
    free(pids);
    return took;
}

/* ---- settle ------------------------------------------------------------------------- */

static unsigned long long runtime_ns(int pid, int tid) {
    char path[64], buf[128];
    snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", pid, tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    return strtoull(buf, NULL, 10);
}

static int in_freezer(int pid, int tid) {
    char path[64], buf[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/wchan", pid, tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    /* 0: running or runnable; get_signal/do_freezer_trap: cgroup2 freezer; __refrigerator: v1
       freezer; do_signal_stop: SIGSTOP */
    return strcmp(buf, "0") == 0 || strcmp(buf, "get_signal") == 0 || strcmp(buf, "do_freezer_trap") == 0
        || strcmp(buf, "__refrigerator") == 0 || strcmp(buf, "do_signal_stop") == 0;
}

static uint64_t settle(const char *procs) {
    uint64_t start = now_ns();
    int *pids;
    int npids = read_pids(procs, &pids);
    list_tasks(pids, npids);
    unsigned long long *base = malloc(sizeof *base * (ntasks ? ntasks : 1));
    for (size_t i = 0; i < ntasks; i++) base[i] = runtime_ns(tasks[i].pid, tasks[i].tid);
    size_t first = 0;  /* as in signal_op: tasks[0..first) have run */
    for (;;) {
        while (first < ntasks) {
            struct task *k = &tasks[first];
            int done = runtime_ns(k->pid, k->tid) > base[first];
            if (!done) {
                char st = thread_state(k->pid, k->tid);
                done = st == 0 || st == 'Z' || st == 'X' || (!is_stopped(st) && !in_freezer(k->pid, k->tid));
            }
            if (!done) break;
            first++;
        }
        if (first == ntasks) break;
        if (now_ns() - start > deadline_ns) {
            fprintf(stderr, "bare: %zu threads have not run 30 s after the thaw\n", ntasks - first);
            exit(1);
        }
        nap(1000000);  /* 1 ms: let the threads run rather than this */
    }
    free(base);
    free(pids);
    return now_ns() - start;
}

static uint64_t settle_dir(const char *path) {
    char procs[4096];
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) snprintf(procs, sizeof procs, "%s/cgroup.procs", path);
    else snprintf(procs, sizeof procs, "%s", path);
    return settle(procs);
}

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
struct clone_args_v2 {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size, cgroup;
};

/* One untimed clone3 + execve first, as a supervisor that has run a while would have done:
 * a process's first fork and exec pay for page tables and caches its later ones do not. */
static void spawn_warm_up(char **program) {
    pid_t pid = fork();
    if (pid == 0) {
        execvp(program[0], program);
        _exit(127);
    }
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
}

static int spawn_once(const char *path, char **program) {
    spawn_warm_up(program);
    int dir = -1;
    if (strcmp(path, "-") != 0) {
        if (mkdir(path, 0755) < 0 || (dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
            perror(path);
            return 1;
        }
    }
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) < 0) return 1;
    struct clone_args_v2 args = {.exit_signal = SIGCHLD};
    if (dir >= 0) {
        args.flags = CLONE_INTO_CGROUP;
        args.cgroup = (uint64_t)dir;
    }
    uint64_t start = now_ns();
    pid_t pid = (pid_t)syscall(SYS_clone3, &args, sizeof args);
    if (pid == 0) {
        execvp(program[0], program);
        _exit(127);
    }
    if (pid < 0) {
        perror("clone3");
        return 1;
    }
    close(pipefd[1]);
    char c;
    while (read(pipefd[0], &c, 1) < 0 && errno == EINTR) {}
    uint64_t spent = now_ns() - start;
    printf("spawn %llu\n", (unsigned long long)spent);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    if (dir >= 0) {
        close(dir);
        rmdir(path);
    }
    return 0;
}

int main(int argc, char **argv) {
    int opt;
    while ((opt = getopt(argc, argv, "i:")) != -1) {
        if (opt == 'i') interval_us = atol(optarg);
        else goto usage;
    }
    if (interval_us < 1 || interval_us > 999999) goto usage;
    char a[4096], b[4096];
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc - optind == 2 && strcmp(argv[optind], "settle") == 0) {
        printf("settle %llu\n", (unsigned long long)settle_dir(argv[optind + 1]));
        return 0;
    }
    if (argc - optind >= 3 && strcmp(argv[optind], "spawn") == 0) return spawn_once(argv[optind + 1], argv + optind + 2);
    /* once BACKEND OP PATH: the pair loop below, run once, doing only OP */
    int once = argc - optind == 4 && strcmp(argv[optind], "once") == 0;
    if (!once && argc - optind != 3) goto usage;
    const char *backend = argv[optind + once], *path = argv[optind + 1 + 2 * once];
    const char *op = once ? argv[optind + 2] : NULL;
    if (once && strcmp(op, "freeze") && strcmp(op, "thaw")) goto usage;
    long n = once ? 1 : atol(argv[optind + 2]);
    int do_freeze = !once || strcmp(op, "freeze") == 0, do_thaw = !once || strcmp(op, "thaw") == 0;

    if (strcmp(backend, "cgroup2") == 0) {
        snprintf(a, sizeof a, "%s/cgroup.freeze", path);
        snprintf(b, sizeof b, "%s/cgroup.events", path);
        int ffd = open_or_die(a, O_WRONLY), efd = open_or_die(b, O_RDONLY);
        for (long i = 0; i < n; i++) {
            if (do_freeze) printf("freeze %llu\n", (unsigned long long)cg2_op(ffd, efd, a, b, 1));
            if (do_thaw) printf("thaw %llu\n", (unsigned long long)cg2_op(ffd, efd, a, b, 0));
            if (!once) printf("settle %llu\n", (unsigned long long)settle_dir(path));
        }
    } else if (strcmp(backend, "cgroup1") == 0) {
        snprintf(a, sizeof a, "%s/freezer.state", path);
        int sfd = open_or_die(a, O_RDWR);
        for (long i = 0; i < n; i++) {
            if (do_freeze) printf("freeze %llu\n", (unsigned long long)cg1_op(sfd, a, 1));
            if (do_thaw) printf("thaw %llu\n", (unsigned long long)cg1_op(sfd, a, 0));
            if (!once) printf("settle %llu\n", (unsigned long long)settle_dir(path));
        }
    } else if (strcmp(backend, "signal") == 0) {
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) snprintf(a, sizeof a, "%s/cgroup.procs", path);
        else snprintf(a, sizeof a, "%s", path);
        for (long i = 0; i < n; i++) {
            if (do_freeze) printf("freeze %llu\n", (unsigned long long)signal_op(a, 1));
            if (do_thaw) printf("thaw %llu\n", (unsigned long long)signal_op(a, 0));
            if (!once) printf("settle %llu\n", (unsigned long long)settle_dir(path));
        }
    } else {
        goto usage;
    }
    return 0;
usage:
    fprintf(stderr, "usage: bare [-i US] cgroup2|cgroup1|signal PATH N\n"
                    "       bare spawn PATH|- PROGRAM [ARG...]\n"
                    "       bare [-i US] once cgroup2|cgroup1|signal freeze|thaw PATH\n"
                    "       bare [-i US] settle PATH\n");
    return 64;
}

/* bare: the kernel's own freeze/thaw latency, with no icebox in between.
 *
 * usage: bare [-i US] cgroup2|cgroup1|signal PATH N
 *
 * Does N freeze/thaw pairs on an existing target and prints one line per operation,
 * "freeze <ns>" and "thaw <ns>", each timed with CLOCK_MONOTONIC from the request to the
 * kernel's confirmation:
 *
 *   cgroup2  PATH is a cgroup v2 directory. Freeze: write "1" to PATH/cgroup.freeze, then
 *            wait until PATH/cgroup.events says "frozen 1" (poll POLLPRI on the open file and
 *            re-read it at least every US microseconds: the kernel rate-limits the POLLPRI
 *            notification to one per 10 ms). Thaw: write "0", wait for "frozen 0".
 *   cgroup1  PATH is a v1 freezer directory. Freeze: write FROZEN to PATH/freezer.state and
 *            read it back every US microseconds until it says FROZEN. Thaw: write THAWED and
 *            read it back until it says THAWED.
 *   signal   PATH is a cgroup directory (or a cgroup.procs file) listing the processes.
 *            Freeze: SIGSTOP every listed process, then read /proc/PID/task/TID/stat until
 *            every thread is in state T (threads already seen stopped are not read again).
 *            Thaw: SIGCONT every process, then read until no thread is in state T.
 *
 * US (default 20) is the re-read interval: the finest this baseline resolves. A freeze that
 * is not confirmed within 30 s is rolled back (thawed) and bare exits 1.
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

static void nap(void) {
    struct timespec ts = {0, interval_us * 1000};
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
        if (events_frozen(events_fd, epath) == freeze) return now_ns() - start;
        if (now_ns() - start > deadline_ns) {
            if (freeze) write_or_die(freeze_fd, "0", fpath);
            fprintf(stderr, "bare: %s not confirmed after 30 s\n", freeze ? "freeze" : "thaw");
            exit(1);
        }
        /* the read above re-armed the notification: POLLPRI means a change since */
        struct pollfd p = {.fd = events_fd, .events = POLLPRI};
        struct timespec ts = {0, interval_us * 1000};
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
        reread(state_fd, buf, sizeof buf, path);
        if (strncmp(buf, want, strlen(want)) == 0) return now_ns() - start;
        if (now_ns() - start > deadline_ns) {
            if (freeze) write_or_die(state_fd, "THAWED", path);
            fprintf(stderr, "bare: v1 state still %s after 30 s\n", buf);
            exit(1);
        }
        nap();
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
    /* tasks[0..pending) are the threads not yet confirmed */
    size_t pending = ntasks;
    for (;;) {
        size_t keep = 0;
        for (size_t i = 0; i < pending; i++) {
            char st = thread_state(tasks[i].pid, tasks[i].tid);
            int done = st == 0 || st == 'Z' || st == 'X' || (freeze ? is_stopped(st) : !is_stopped(st));
            if (!done) tasks[keep++] = tasks[i];
        }
        pending = keep;
        if (pending == 0) break;
        if (now_ns() - start > deadline_ns) {
            if (freeze) for (int i = 0; i < npids; i++) kill(pids[i], SIGCONT);
            fprintf(stderr, "bare: %zu threads not %s after 30 s\n", pending, freeze ? "stopped" : "continued");
            exit(1);
        }
        nap();
    }
    uint64_t took = now_ns() - start;
    free(pids);
    return took;
}

int main(int argc, char **argv) {
    int opt;
    while ((opt = getopt(argc, argv, "i:")) != -1) {
        if (opt == 'i') interval_us = atol(optarg);
        else goto usage;
    }
    if (argc - optind != 3 || interval_us < 1 || interval_us > 999999) goto usage;
    const char *backend = argv[optind], *path = argv[optind + 1];
    long n = atol(argv[optind + 2]);
    char a[4096], b[4096];
    setvbuf(stdout, NULL, _IOLBF, 0);

    if (strcmp(backend, "cgroup2") == 0) {
        snprintf(a, sizeof a, "%s/cgroup.freeze", path);
        snprintf(b, sizeof b, "%s/cgroup.events", path);
        int ffd = open_or_die(a, O_WRONLY), efd = open_or_die(b, O_RDONLY);
        for (long i = 0; i < n; i++) {
            printf("freeze %llu\n", (unsigned long long)cg2_op(ffd, efd, a, b, 1));
            printf("thaw %llu\n", (unsigned long long)cg2_op(ffd, efd, a, b, 0));
        }
    } else if (strcmp(backend, "cgroup1") == 0) {
        snprintf(a, sizeof a, "%s/freezer.state", path);
        int sfd = open_or_die(a, O_RDWR);
        for (long i = 0; i < n; i++) {
            printf("freeze %llu\n", (unsigned long long)cg1_op(sfd, a, 1));
            printf("thaw %llu\n", (unsigned long long)cg1_op(sfd, a, 0));
        }
    } else if (strcmp(backend, "signal") == 0) {
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) snprintf(a, sizeof a, "%s/cgroup.procs", path);
        else snprintf(a, sizeof a, "%s", path);
        for (long i = 0; i < n; i++) {
            printf("freeze %llu\n", (unsigned long long)signal_op(a, 1));
            printf("thaw %llu\n", (unsigned long long)signal_op(a, 0));
        }
    } else {
        goto usage;
    }
    return 0;
usage:
    fprintf(stderr, "usage: bare [-i US] cgroup2|cgroup1|signal PATH N\n");
    return 64;
}

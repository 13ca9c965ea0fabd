/* workload: an app of a given size for the freeze/thaw benchmarks.
 *
 * usage: workload [-c CGROUP_PROCS] [-I] [-y US] procs|threads N idle|busy
 *
 *   procs N    N processes in all: this one and N-1 forked children
 *   threads N  one process with N threads in all (this one and N-1 pthreads, 64 KiB stacks)
 *   idle       every process/thread sleeps in pause()
 *   busy       every process/thread spins on the CPU
 *   -c FILE    first write this process's pid to FILE (a cgroup.procs: the benchmark puts
 *              busy workloads in a v1 cpu cgroup of low weight so the machine stays usable)
 *   -I         run under SCHED_IDLE (the fallback when there is no cpu cgroup to use)
 *   -y US      busy: call sched_yield() after every US microseconds of spinning, so that all
 *              the spinners get the CPU within milliseconds of each other (with plain spinning
 *              and the kernel's tick-driven preemption, a thawed task waits ~N x 4 ms / CPUs
 *              for its first run, and a freeze asked for before then finds it still frozen)
 *
 * Busy processes/threads start spinning only once all of them have started. Once every
 * process/thread is running it sends READY=1 to $NOTIFY_SOCKET (sd_notify), so
 * `icebox launch --ready notify` returns only when the whole workload is there. Children
 * die with their parent (PR_SET_PDEATHSIG). Compile: gcc -O2 -pthread -o workload workload.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int busy;
static long yield_us;   /* busy: sched_yield() after this much spinning (0: never) */
static int started[2];  /* a pipe: one byte per process/thread once it runs */
static int go[2];       /* a pipe closed by the first process once all have started */

static void run_forever(void) {
    if (busy) {
        /* Spin only once everything has started: spinners that start early would slow the
           creation of the rest (quadratically, on a 2-core machine). */
        char c;
        while (read(go[0], &c, 1) < 0 && errno == EINTR) {}
        volatile unsigned long x = 0;
        if (yield_us <= 0)
            for (;;) x++;
        for (;;) {
            struct timespec a, b;
            clock_gettime(CLOCK_MONOTONIC, &a);
            do {
                for (int i = 0; i < 1000; i++) x++;
                clock_gettime(CLOCK_MONOTONIC, &b);
            } while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < yield_us);
            sched_yield();
        }
    }
    for (;;) pause();
}

static void announce(void) {
    char c = 1;
    while (write(started[1], &c, 1) < 0 && errno == EINTR) {}
}

static void *thread_main(void *arg) {
    (void)arg;
    announce();
    run_forever();
    return NULL;
}

static void notify_ready(void) {
    const char *path = getenv("NOTIFY_SOCKET");
    if (!path || !*path) return;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t len = strlen(path);
    if (len >= sizeof sa.sun_path) return;
    memcpy(sa.sun_path, path, len);
    if (sa.sun_path[0] == '@') sa.sun_path[0] = 0;  /* abstract socket */
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    const char msg[] = "READY=1";
    if (sendto(fd, msg, sizeof msg - 1, 0, (struct sockaddr *)&sa,
               (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0)
        perror("workload: sd_notify");
    close(fd);
}

int main(int argc, char **argv) {
    const char *cgroup_procs = NULL;
    int sched_idle = 0, opt;
    while ((opt = getopt(argc, argv, "c:Iy:")) != -1) {
        if (opt == 'c') cgroup_procs = optarg;
        else if (opt == 'I') sched_idle = 1;
        else if (opt == 'y') yield_us = atol(optarg);
        else goto usage;
    }
    if (argc - optind != 3) goto usage;
    const char *kind = argv[optind];
    long n = atol(argv[optind + 1]);
    const char *mode = argv[optind + 2];
    if (n < 1 || (strcmp(kind, "procs") && strcmp(kind, "threads"))) goto usage;
    if (strcmp(mode, "busy") == 0) busy = 1;
    else if (strcmp(mode, "idle") != 0) goto usage;

    if (cgroup_procs) {
        int fd = open(cgroup_procs, O_WRONLY | O_CLOEXEC);
        char pid[32];
        int len = snprintf(pid, sizeof pid, "%d", getpid());
        if (fd < 0 || write(fd, pid, (size_t)len) < 0) { perror(cgroup_procs); return 1; }
        close(fd);
    }
    if (sched_idle) {
        struct sched_param sp = {0};
        if (sched_setscheduler(0, SCHED_IDLE, &sp) < 0) perror("workload: SCHED_IDLE");
    }
    if (pipe2(started, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0) { perror("pipe"); return 1; }

    long made = 0;
    if (strcmp(kind, "procs") == 0) {
        pid_t parent = getpid();
        for (long i = 1; i < n; i++) {
            pid_t pid = fork();
            if (pid < 0) { fprintf(stderr, "workload: fork %ld of %ld: %s\n", i, n - 1, strerror(errno)); return 1; }
            if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (getppid() != parent) _exit(0);
                close(started[0]);
                close(go[1]);
                announce();
                close(started[1]);
                run_forever();
            }
            made++;
        }
    } else {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 64 * 1024);
        for (long i = 1; i < n; i++) {
            pthread_t t;
            int err = pthread_create(&t, &attr, thread_main, NULL);
            if (err) { fprintf(stderr, "workload: thread %ld of %ld: %s\n", i, n - 1, strerror(err)); return 1; }
            made++;
        }
    }
    /* wait until every child/thread has run */
    char buf[4096];
    for (long got = 0; got < made;) {
        ssize_t r = read(started[0], buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) { perror("workload: wait for start"); return 1; }
        got += r;
    }
    /* READY=1 first: once 10000 spinners run, this thread waits its turn among them */
    notify_ready();
    close(go[1]);  /* releases the spinners: read() returns 0 */
    run_forever();

usage:
    fprintf(stderr, "usage: workload [-c CGROUP_PROCS] [-I] [-y US] procs|threads N idle|busy\n");
    return 64;
}

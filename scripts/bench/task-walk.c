/* task-walk: what a read of one thread's /proc stat costs by its full path
 * ("/proc/PID/task/TID/stat") against a read relative to /proc/PID/task kept open
 * ("TID/stat" with openat), as icebox's TaskDirectory reads them.
 *
 * usage: task-walk PID [ROUNDS]
 *
 * Lists PID's threads once, then for each round reads every thread's stat both ways (open,
 * read, close) and prints the mean µs per read of each. Run it against an idle process of many
 * threads (scripts/bench/workload.c: `workload threads 1000 idle`); the first round warms the
 * dentry cache. Compile: gcc -O2 -o task-walk task-walk.c
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static unsigned long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

static void read_once(int dir, const char *path) {
    char buf[1024];
    int fd = openat(dir, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    if (read(fd, buf, sizeof buf - 1) < 0) perror("read");
    close(fd);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: task-walk PID [ROUNDS]\n");
        return 2;
    }
    int pid = atoi(argv[1]), rounds = argc > 2 ? atoi(argv[2]) : 6;
    char task[64];
    snprintf(task, sizeof task, "/proc/%d/task", pid);
    DIR *d = opendir(task);
    if (!d) {
        perror(task);
        return 1;
    }
    int *tids = NULL, n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        if (n == cap) tids = realloc(tids, sizeof *tids * (size_t)(cap = cap ? cap * 2 : 1024));
        tids[n++] = atoi(e->d_name);
    }
    closedir(d);
    int dir = open(task, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0 || n == 0) {
        perror(task);
        return 1;
    }
    for (int r = 0; r < rounds; r++) {
        char path[64];
        unsigned long long a = now_ns();
        for (int i = 0; i < n; i++) {
            snprintf(path, sizeof path, "/proc/%d/task/%d/stat", pid, tids[i]);
            read_once(AT_FDCWD, path);
        }
        unsigned long long b = now_ns();
        for (int i = 0; i < n; i++) {
            snprintf(path, sizeof path, "%d/stat", tids[i]);
            read_once(dir, path);
        }
        unsigned long long c = now_ns();
        printf("%d threads: full path %.2f µs a read, from the kept task directory %.2f µs\n", n, (double)(b - a) / 1e3 / n,
               (double)(c - b) / 1e3 / n);
    }
    return 0;
}

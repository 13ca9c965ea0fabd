/* tight: process start-up and one-shot commands timed with nothing in between, for
 * scripts/bench/oneshot-tight (Python's subprocess adds ~0.5 ms and its own noise to every
 * figure of the suite's one-shot table).
 *
 * usage: tight spawn ROUNDS CMD... [:: CMD...]... [::: CMD... [:: CMD...]...]...
 *          runs the commands in turn, ROUNDS times (interleaved), each by posix_spawn with
 *          stdout on /dev/null, and prints "median_us p25_us cpu_us CMD" per command, where
 *          cpu_us is the median CPU time of the command's process (user + system, from wait4:
 *          the kernel's own count, which the other vCPU's tenants disturb less than a wall
 *          clock, so it tells two builds of a client apart more surely). Leading
 *          NAME=VALUE words of a command are added to its environment. ":::" ends a group
 *          (commands that must run in their order, such as a suspend and its resume): each
 *          round runs the groups in a new random order (the same for a given ROUNDS), so
 *          that no command always comes first or always follows the same one. Where a command
 *          sat in the round moved medians by ~0.2 ms on the 2-vCPU VM; with the groups only
 *          rotated, the command after another build's suspend and resume was ~0.05 ms slower,
 *          whichever build it was. With TIGHT_PAUSE_US set, each command is spawned after
 *          that long a pause (nanosleep): as a command typed in a shell comes after the CPU
 *          has idled, its caches cooled by other tenants.
 *        tight rt ROUNDS SOCKET APP [SOCKET APP]...
 *          sends the daemon's own suspend (grace 0) and resume requests for APP on each
 *          control SOCKET in turn and times each from connect to the "done" reply: the
 *          daemon's part of a command, with no client start-up. Prints "SOCKET suspend_us
 *          resume_us" (medians).
 *        tight request SOCKET suspend|resume APP
 *          sends that one request and exits 0 on a "done" reply with code 0 (else prints it
 *          and exits 1): the floor of a one-shot icebox command, a client with nothing but
 *          the protocol in it (built with -static, its start is a static C program's), spawned
 *          by `tight spawn` beside icebox's own client against the same daemon.
 * Compile: gcc -O2 -o tight tight.c
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[n / 2];
}

static int spawn_mode(int rounds, int argc, char **argv) {
    char **cmds[32];
    int n = 0, groups = 1, group_start[33] = {0};
    cmds[n++] = &argv[0];
    for (int i = 0; i < argc && n < 32; i++) {
        int ends_group = !strcmp(argv[i], ":::");
        if (!ends_group && strcmp(argv[i], "::")) continue;
        argv[i] = NULL;
        if (ends_group) group_start[groups++] = n;
        cmds[n++] = &argv[i + 1];
    }
    group_start[groups] = n;
    double *t = calloc((size_t)(n * rounds), sizeof *t);
    double *cpu = calloc((size_t)(n * rounds), sizeof *cpu);
    const char *pause_text = getenv("TIGHT_PAUSE_US");
    long pause_us = pause_text ? atol(pause_text) : 0;
    struct timespec pause = {pause_us / 1000000, (pause_us % 1000000) * 1000};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    /* The order of the commands in each round: the groups shuffled (Fisher-Yates, xorshift64
       with a fixed seed), each group's commands in their order. */
    int order[32], perm[33];
    unsigned long long seed = 0x9E3779B97F4A7C15ull;
    for (int r = 0; r < rounds; r++) {
        for (int g = 0; g < groups; g++) perm[g] = g;
        for (int g = groups - 1; g > 0; g--) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            int j = (int)(seed % (unsigned long long)(g + 1)), x = perm[g];
            perm[g] = perm[j], perm[j] = x;
        }
        int k = 0;
        for (int g = 0; g < groups; g++)
            for (int c = group_start[perm[g]]; c < group_start[perm[g] + 1]; c++) order[k++] = c;
        for (k = 0; k < n; k++) {
            int c = order[k];
            char **cmd = cmds[c], *env[512];
            int ne = 0;
            /* The command's NAME=VALUE words replace the same names inherited: appended after
               them, getenv would find the inherited ones first (a caller with its own
               ICEBOX_RUNTIME_DIR had every build's commands talk to its daemon). */
            char **words = cmd;
            while (*cmd && strchr(*cmd, '=') && (*cmd)[0] != '/' && ne < 30) env[ne++] = *cmd++;
            for (char **e = environ; *e && ne < 510; e++) {
                size_t len = (size_t)(strchrnul(*e, '=') - *e);
                int replaced = 0;
                for (char **w = words; w < cmd; w++)
                    if (!strncmp(*w, *e, len) && (*w)[len] == '=') replaced = 1;
                if (!replaced) env[ne++] = *e;
            }
            env[ne] = NULL;
            pid_t p;
            int st;
            struct rusage ru;
            if (pause_us > 0) nanosleep(&pause, NULL);
            double a = now_us();
            if (posix_spawn(&p, cmd[0], &fa, NULL, cmd, env)) { perror(cmd[0]); return 1; }
            wait4(p, &st, 0, &ru);
            t[c * rounds + r] = now_us() - a;
            cpu[c * rounds + r] = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
            if (!WIFEXITED(st) || WEXITSTATUS(st)) { fprintf(stderr, "%s failed\n", cmd[0]); return 1; }
        }
    }
    for (int c = 0; c < n; c++) {
        char **cmd = cmds[c];
        double *v = t + c * rounds, *u = cpu + c * rounds;
        qsort(v, (size_t)rounds, sizeof *v, cmp);
        qsort(u, (size_t)rounds, sizeof *u, cmp);
        printf("%.0f %.0f %.0f", v[rounds / 2], v[rounds / 4], u[rounds / 2]);
        for (; *cmd; cmd++) if (!strchr(*cmd, '=') || (*cmd)[0] == '/') printf(" %s", *cmd);
        printf("\n");
    }
    return 0;
}

static double round_trip(const char *path, const char *msg) {
    double a = now_us();
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    if (fd < 0 || connect(fd, (void *)&sa, sizeof sa)) { perror(path); exit(1); }
    if (write(fd, msg, strlen(msg)) < 0) { perror("write"); exit(1); }
    static char buf[65536];
    size_t got = 0;
    for (;;) {
        ssize_t k = read(fd, buf + got, sizeof buf - 1 - got);
        if (k <= 0) break;
        got += (size_t)k;
        buf[got] = 0;
        if (strstr(buf, "\"kind\":\"done\"")) break;
    }
    close(fd);
    if (!strstr(buf, "\"code\":0")) { fprintf(stderr, "%s: %s\n", path, buf); exit(1); }
    return now_us() - a;
}

/* The same requests as rt_mode, so the floor and the daemon's part measure the same work. */
static void request_text(char *out, size_t size, const char *what, const char *app) {
    if (!strcmp(what, "suspend"))
        snprintf(out, size, "{\"suspend\":{\"grace_ns\":0,\"names\":[\"%s\"]}}\n", app);
    else
        snprintf(out, size, "{\"resume\":{\"names\":[\"%s\"],\"wait_ready\":false}}\n", app);
}

static int rt_mode(int rounds, int argc, char **argv) {
    int k = argc / 2;
    double *s = calloc((size_t)(k * rounds), sizeof *s), *r = calloc((size_t)(k * rounds), sizeof *r);
    for (int i = 0; i < rounds; i++)
        for (int j = 0; j < k; j++) {
            char m1[512], m2[512];
            request_text(m1, sizeof m1, "suspend", argv[2 * j + 1]);
            request_text(m2, sizeof m2, "resume", argv[2 * j + 1]);
            s[j * rounds + i] = round_trip(argv[2 * j], m1);
            usleep(2000);
            r[j * rounds + i] = round_trip(argv[2 * j], m2);
            usleep(2000);
        }
    for (int j = 0; j < k; j++)
        printf("%s %.0f %.0f\n", argv[2 * j], median(s + j * rounds, rounds), median(r + j * rounds, rounds));
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 4 && !strcmp(argv[1], "spawn")) return spawn_mode(atoi(argv[2]), argc - 3, argv + 3);
    if (argc >= 5 && !strcmp(argv[1], "rt") && (argc - 3) % 2 == 0) return rt_mode(atoi(argv[2]), argc - 3, argv + 3);
    if (argc == 5 && !strcmp(argv[1], "request") && (!strcmp(argv[3], "suspend") || !strcmp(argv[3], "resume"))) {
        char msg[512];
        request_text(msg, sizeof msg, argv[3], argv[4]);
        round_trip(argv[2], msg);
        return 0;
    }
    fprintf(stderr, "usage: tight spawn ROUNDS CMD... [:: CMD...]... | tight rt ROUNDS SOCKET APP... | tight request SOCKET suspend|resume APP\n");
    return 64;
}

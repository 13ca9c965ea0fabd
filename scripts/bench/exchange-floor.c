/* exchange-floor: the floor of one request/reply exchange on a unix stream socket, as icebox's
 * clients make one (connect, one request line, the server's turn of an epoll loop, the reply
 * lines, close), between two C programs that do nothing else: for scripts/bench/library-call,
 * which sets a library call's overhead against it in the same run.
 *
 * usage: exchange-floor serve SOCKET        an epoll server: accept, SO_PEERCRED, add to epoll,
 *                                           read the line, reply with two lines (the size of a
 *                                           ping's), close (as icebox's daemon does)
 *        exchange-floor ping SOCKET ROUNDS   ROUNDS exchanges, 5 ms apart; prints each one's
 *                                           wall time in ns, one a line
 * Compile: gcc -O2 -o exchange-floor exchange-floor.c
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static const char reply[] = "{\"kind\":\"line\",\"text\":\"icebox daemon 1 (pid 1) answers\"}\n{\"code\":0,\"kind\":\"done\"}\n";

static int serve(const char *path) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
    int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    unlink(path);
    if (listener < 0 || bind(listener, (void *)&addr, sizeof addr) < 0 || listen(listener, 64) < 0) return perror("listen"), 1;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = listener};
    epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev);
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        struct epoll_event ready[64];
        int n = epoll_wait(ep, ready, 64, -1);
        for (int i = 0; i < n; i++) {
            int fd = ready[i].data.fd;
            if (fd == listener) {
                fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd < 0) continue;
                struct ucred cred;
                socklen_t len = sizeof cred;
                getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len);
                struct epoll_event client = {.events = EPOLLIN | EPOLLRDHUP, .data.fd = fd};
                epoll_ctl(ep, EPOLL_CTL_ADD, fd, &client);
            }
            char buf[4096];
            ssize_t got = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
            if (got > 0 && memchr(buf, '\n', got)) {
                send(fd, reply, sizeof reply - 1, MSG_NOSIGNAL);
                close(fd);
            } else if (got == 0) {
                close(fd);
            }
        }
    }
}

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int ping(const char *path, int rounds) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
    const char request[] = "{\"ping\":{}}\n";
    for (int i = 0; i < rounds; i++) {
        long long start = now_ns();
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (void *)&addr, sizeof addr) < 0) return perror("connect"), 1;
        if (write(fd, request, sizeof request - 1) < 0) return perror("write"), 1;
        char buf[4096];
        size_t have = 0;
        for (;;) {
            ssize_t got = read(fd, buf + have, sizeof buf - 1 - have);
            if (got <= 0) break;
            have += got;
            buf[have] = 0;
            if (strstr(buf, "\"done\"")) break;
        }
        close(fd);
        printf("%lld\n", now_ns() - start);
        usleep(5000);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "serve") == 0) return serve(argv[2]);
    if (argc == 4 && strcmp(argv[1], "ping") == 0) return ping(argv[2], atoi(argv[3]));
    fprintf(stderr, "usage: exchange-floor serve SOCKET | exchange-floor ping SOCKET ROUNDS\n");
    return 64;
}

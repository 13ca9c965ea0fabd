// Spawn stand-ins (see icebox_stand_in.h). The stand-in is a fork of a multithreaded process:
// everything it runs is async-signal-safe (raw syscalls, no malloc, no locks). The request travels
// in a sealed-off memfd, so its size has no socket-buffer limit, and the stand-in turns the offsets
// in it into pointers in its private mapping.
#include "icebox_stand_in.h"
#include "spawn_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

_Static_assert(sizeof(char *) == sizeof(uint64_t), "the request's pointer arrays hold 64-bit offsets");

#define SPEC_MAGIC 0x69636531u        // "ice1"
#define SPEC_LIMIT (64u << 20)        // far above ARG_MAX: anything bigger is not a request

// The request in the memfd: this header, then the argv and envp arrays (offsets of
// NUL-terminated strings, a 0 after the last), the groups, then the strings.
struct spec {
    uint32_t magic, size;
    uint32_t path, cwd; // string offsets; cwd 0: inherit
    uint32_t argv, envp, groups;
    uint32_t argc, envc, ngroups;
    int32_t new_session, set_identity, cap_last_cap, new_pid_namespace;
    uint32_t uid, gid;
    uint64_t nofile_soft;
};

// Which descriptors follow the memfd in the request message, in this order.
enum { HAS_STDIN = 1, HAS_STDOUT = 2, HAS_STDERR = 4, HAS_EXTRA = 8, HAS_CGROUP = 16, HAS_PROCS = 32 };

struct reply {
    int32_t status; // 0: result below; else the errno of why the stand-in could not spawn
    struct icebox_spawn_result result; // with status 0: child_errno 0; the pidfd travels as a descriptor
};

static size_t align8(size_t n) { return (n + 7) & ~(size_t)7; }

// ---- the daemon's side ----

static size_t count_strings(char *_Nullable const *_Nullable list) {
    size_t n = 0;
    if (list) while (list[n]) n++;
    return n;
}

// Writes req into a new memfd; returns it, or -1 with errno.
static int write_spec(const struct icebox_spawn_request *req) {
    size_t argc = count_strings(req->argv), envc = count_strings(req->envp);
    size_t size = align8(sizeof(struct spec));
    size_t argv_off = size;
    size += (argc + 1) * 8;
    size_t envp_off = size;
    size += (envc + 1) * 8;
    size_t groups_off = size;
    size = align8(size + req->ngroups * sizeof(gid_t));
    size_t strings_off = size;
    size += strlen(req->path) + 1 + (req->cwd ? strlen(req->cwd) + 1 : 0);
    for (size_t i = 0; i < argc; i++) size += strlen(req->argv[i]) + 1;
    for (size_t i = 0; i < envc; i++) size += strlen(req->envp[i]) + 1;
    if (size > SPEC_LIMIT) {
        errno = E2BIG;
        return -1;
    }
    char *buf = calloc(1, size);
    if (!buf) return -1;
    struct spec *h = (struct spec *)buf;
    size_t at = strings_off;
#define PUT(s) ({ size_t o = at; size_t l = strlen(s) + 1; memcpy(buf + at, (s), l); at += l; (uint32_t)o; })
    *h = (struct spec){
        .magic = SPEC_MAGIC, .size = (uint32_t)size, .argv = (uint32_t)argv_off, .envp = (uint32_t)envp_off,
        .groups = (uint32_t)groups_off, .argc = (uint32_t)argc, .envc = (uint32_t)envc, .ngroups = (uint32_t)req->ngroups,
        .new_session = req->new_session, .set_identity = req->set_identity, .cap_last_cap = req->cap_last_cap,
        .new_pid_namespace = req->new_pid_namespace,
        .uid = req->uid, .gid = req->gid, .nofile_soft = req->nofile_soft,
    };
    h->path = PUT(req->path);
    if (req->cwd) h->cwd = PUT(req->cwd);
    uint64_t *argv = (uint64_t *)(buf + argv_off), *envp = (uint64_t *)(buf + envp_off);
    for (size_t i = 0; i < argc; i++) argv[i] = PUT(req->argv[i]);
    for (size_t i = 0; i < envc; i++) envp[i] = PUT(req->envp[i]);
#undef PUT
    if (req->ngroups) memcpy(buf + groups_off, req->groups, req->ngroups * sizeof(gid_t));

    int fd = memfd_create("icebox-spawn-request", MFD_CLOEXEC);
    if (fd < 0) {
        free(buf);
        return -1;
    }
    for (size_t done = 0; done < size;) {
        ssize_t n = write(fd, buf + done, size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int saved = n < 0 ? errno : EIO;
            free(buf);
            close(fd);
            errno = saved;
            return -1;
        }
        done += (size_t)n;
    }
    free(buf);
    return fd;
}

int icebox_stand_in_ready(int sock, int *attach_errno) {
    int32_t value = 0;
    ssize_t n;
    do { n = recv(sock, &value, sizeof value, MSG_DONTWAIT); } while (n < 0 && errno == EINTR);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    if (n != (ssize_t)sizeof value) {
        errno = EPIPE;
        return -1;
    }
    *attach_errno = value;
    return 1;
}

int icebox_stand_in_send(int sock, const struct icebox_spawn_request *req) {
    int memfd = write_spec(req);
    if (memfd < 0) return -1;
    int fds[8] = {memfd};
    int nfds = 1;
    int32_t mask = 0;
    const int given[] = {req->stdin_fd, req->stdout_fd, req->stderr_fd, req->extra_fd, req->cgroup_fd, req->cgroup_procs_fd};
    for (int i = 0; i < 6; i++) {
        if (given[i] < 0) continue;
        mask |= 1 << i;
        fds[nfds++] = given[i];
    }
    // The only message this socket ever carries towards the stand-in: its buffer is empty, so
    // the send does not wait, even on a stand-in that is stopped.
    ssize_t sent = icebox_send_with_fds(sock, &mask, sizeof mask, fds, nfds);
    int saved = errno;
    close(memfd);
    if (sent < 0) {
        errno = saved;
        return -1;
    }
    return 0;
}

int icebox_stand_in_result(int sock, struct icebox_spawn_result *result) {
    memset(result, 0, sizeof *result);
    result->pidfd = -1;
    struct reply reply;
    int got[2] = {-1, -1}, ngot = 0;
    pid_t ignored_pid;
    uid_t ignored_uid;
    ssize_t n = icebox_recv_with_fds_creds(sock, &reply, sizeof reply, got, 2, &ngot, &ignored_pid, &ignored_uid);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    int status = n != (ssize_t)sizeof reply ? (n < 0 ? errno : EPIPE) : reply.status ? reply.status : ngot != 2 ? EPROTO : 0;
    if (status) {
        for (int i = 0; i < ngot; i++) close(got[i]);
        errno = status;
        return -1;
    }
    // The app is our child (CLONE_PARENT): its execve is waited for here, as a direct spawn would,
    // rather than by the stand-in, which saves a wake-up on the way back. After a vfork (the usual
    // clone) there is nothing left to wait for: the clone returned in the stand-in once the child
    // had run its execve or failed.
    *result = reply.result; // its pidfd is replaced below, on every path
    icebox_spawn_await_exec(got[1], got[0], 0, result);
    return 1;
}

// ---- the stand-in's side ----

static int valid_string(const char *base, uint32_t size, uint64_t off) {
    return off > 0 && off < size && memchr(base + off, 0, size - off) != NULL;
}

// Turns an array of string offsets into pointers, in place; 0 when an offset is bad.
static int resolve_array(char *base, uint32_t size, uint32_t off, uint32_t count) {
    if (off % 8 || (uint64_t)off + ((uint64_t)count + 1) * 8 > size) return 0;
    uint64_t *entries = (uint64_t *)(base + off);
    if (entries[count] != 0) return 0;
    for (uint32_t i = 0; i < count; i++) {
        if (!valid_string(base, size, entries[i])) return 0;
        entries[i] = (uint64_t)(uintptr_t)(base + entries[i]);
    }
    return 1;
}

// Maps the request and fills req from it (its descriptors 0: the caller sets them); 0 with errno
// when malformed.
static int read_spec(int memfd, struct icebox_spawn_request *req) {
    struct stat st;
    if (fstat(memfd, &st) < 0) return 0;
    if (st.st_size < (off_t)sizeof(struct spec) || st.st_size > (off_t)SPEC_LIMIT) {
        errno = EINVAL;
        return 0;
    }
    uint32_t size = (uint32_t)st.st_size;
    char *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, memfd, 0);
    if (base == MAP_FAILED) return 0;
    struct spec h;
    memcpy(&h, base, sizeof h);
    errno = EINVAL;
    if (h.magic != SPEC_MAGIC || h.size != size || !valid_string(base, size, h.path)) return 0;
    if (h.cwd && !valid_string(base, size, h.cwd)) return 0;
    if (!resolve_array(base, size, h.argv, h.argc) || !resolve_array(base, size, h.envp, h.envc)) return 0;
    if (h.groups % 4 || (uint64_t)h.groups + (uint64_t)h.ngroups * sizeof(gid_t) > size) return 0;
    *req = (struct icebox_spawn_request){
        .path = base + h.path, .cwd = h.cwd ? base + h.cwd : NULL, .argv = (char *const *)(base + h.argv),
        .envp = (char *const *)(base + h.envp), .groups = h.ngroups ? (const gid_t *)(base + h.groups) : NULL,
        .ngroups = h.ngroups, .new_session = h.new_session, .new_pid_namespace = h.new_pid_namespace,
        .set_identity = h.set_identity, .cap_last_cap = h.cap_last_cap, .uid = h.uid, .gid = h.gid,
        .nofile_soft = h.nofile_soft,
    };
    return 1;
}

// The reply: the child's pid and method with its pidfd and the read end of its error
// pipe, or only a status saying why there is no child.
static void send_reply(int sock, int32_t status, const struct icebox_spawn_result *result, int err_read) {
    struct reply reply = {.status = status, .result = status ? (struct icebox_spawn_result){0} : *result};
    int fds[2] = {result->pidfd, err_read};
    (void)icebox_send_with_fds(sock, &reply, sizeof reply, status ? NULL : fds, status ? 0 : 2);
}

// Closes every descriptor but 0, 1, 2 and the n in keep (at most 8, each above 2).
static void close_all_but(const int *keep, int n) {
    int sorted[8];
    for (int i = 0; i < n; i++) {
        int j = i;
        for (; j > 0 && sorted[j - 1] > keep[i]; j--) sorted[j] = sorted[j - 1];
        sorted[j] = keep[i];
    }
    unsigned int from = 3;
    int ok = 1;
    for (int i = 0; i <= n && ok; i++) {
        unsigned int to = i < n ? (unsigned int)sorted[i] : ~0U;
        if (to > from) ok = syscall(SYS_close_range, from, i < n ? to - 1 : to, 0) == 0;
        if (i < n) from = (unsigned int)sorted[i] + 1;
    }
    if (ok) return;
    struct rlimit limit;
    int top = getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < 1u << 20 ? (int)limit.rlim_cur : 1 << 20;
    for (int fd = 3; fd < top; fd++) {
        int kept = 0;
        for (int i = 0; i < n; i++) kept |= keep[i] == fd;
        if (!kept) close(fd);
    }
}

// Moves this stand-in off the CPU its app has just started on (see clone3_vfork), to any other it
// may use, so its last steps (a wake-up by the daemon, its exit) run beside the app: on the app's
// CPU it waited behind the app's start-up (~0.8 ms for /bin/sleep) while the daemon, which reaps it
// first, waited on it. Nothing to do with one CPU.
static void leave_the_app_alone(void) {
    cpu_set_t allowed;
    int cpu = sched_getcpu();
    if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof allowed, &allowed) < 0 || !CPU_ISSET(cpu, &allowed) ||
        CPU_COUNT(&allowed) < 2)
        return;
    CPU_CLR(cpu, &allowed);
    (void)sched_setaffinity(0, sizeof allowed, &allowed);
}

__attribute__((noreturn)) static void stand_in_main(int sock, const int *procs_fds, int nprocs, pid_t parent) {
    // It must not outlive the daemon: an idle stand-in holds cgroups nobody would remove.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent || nprocs > 7) _exit(1);
    // Nothing of the daemon stays open here, and that first: a client's socket kept open by
    // a stand-in would never see its end of file, and the daemon's lock file would stay
    // locked for a moment after the daemon died (the write below can take milliseconds).
    int keep[8];
    for (int i = 0; i < nprocs; i++) keep[i] = procs_fds[i] > 2 ? procs_fds[i] : fcntl(procs_fds[i], F_DUPFD_CLOEXEC, 3);
    keep[nprocs] = sock > 2 ? sock : fcntl(sock, F_DUPFD_CLOEXEC, 3);
    for (int i = 0; i <= nprocs; i++)
        if (keep[i] < 0) _exit(1);
    close_all_but(keep, nprocs + 1);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 0; fd < 3 && null >= 0; fd++) dup2(null, fd);
    if (null > 2) close(null);
    int32_t attach = 0;
    // "0" is the writer itself: this is where the RCU grace period is waited out.
    for (int i = 0; i < nprocs; i++) {
        if (!attach && write(keep[i], "0", 1) < 0) attach = errno;
        close(keep[i]);
    }
    sock = keep[nprocs];
    if (send(sock, &attach, sizeof attach, MSG_NOSIGNAL) < 0 || attach) _exit(1);

    int32_t mask = 0;
    int fds[8];
    int nfds = 0;
    pid_t ignored_pid;
    uid_t ignored_uid;
    ssize_t n;
    do {
        n = icebox_recv_with_fds_creds(sock, &mask, sizeof mask, fds, 8, &nfds, &ignored_pid, &ignored_uid);
    } while (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && icebox_poll_ns(sock, POLLIN, 60000000000ULL) >= 0);
    if (n <= 0) _exit(0); // the daemon closed our socket: not needed any more
    struct icebox_spawn_result result = {0};
    struct icebox_spawn_request req = {0};
    int expected = 1;
    for (int i = 0; i < 6; i++) expected += (mask >> i) & 1;
    if (n != (ssize_t)sizeof mask || nfds != expected || !read_spec(fds[0], &req)) {
        send_reply(sock, errno ? errno : EINVAL, &result, -1);
        _exit(1);
    }
    int *slot[] = {&req.stdin_fd, &req.stdout_fd, &req.stderr_fd, &req.extra_fd, &req.cgroup_fd, &req.cgroup_procs_fd};
    int next = 1;
    for (int i = 0; i < 6; i++) *slot[i] = (mask >> i) & 1 ? fds[next++] : -1;
    req.v1_procs_fd = -1;        // joined already: that is what a stand-in is for
    req.v1_memory_procs_fd = -1;
    int err_read = -1;
    int rc = icebox_spawn_as(&req, &result, 1, &err_read);
    if (rc == 0 && result.method == ICEBOX_SPAWN_CLONE3_INTO_CGROUP) result.method = ICEBOX_SPAWN_STAND_IN_INTO_CGROUP;
    if (rc == 0 && req.cgroup_fd < 0) result.method = ICEBOX_SPAWN_STAND_IN;
    // A move that failed (the fallback without CLONE_INTO_CGROUP) left no error pipe: a
    // status then, the child killed already and the daemon's to reap when it sees it.
    if (rc == 0 && result.child_errno) rc = -1, errno = result.child_errno;
    if (rc == 0) leave_the_app_alone();
    send_reply(sock, rc < 0 ? (errno ? errno : EIO) : 0, &result, err_read);
    // Exiting tears down this copy of the daemon's address space, ~150 µs here. Right now that
    // would run ahead of the app, on the CPU the app shares with us (the vfork woke us at the start
    // of its execve, and a woken task preempts), and delay the rest of its execve. So wait for the
    // daemon, which shuts the socket down once it has seen the exec (SpawnStandIn.outcome);
    // bounded, and a daemon that dies kills us (PR_SET_PDEATHSIG).
    if (rc == 0) (void)icebox_poll_ns(sock, POLLIN, 5000000000ULL);
    _exit(0);
}

pid_t icebox_stand_in_start(const int *procs_fds, int nprocs, int *pidfd, int *sock) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0) return -1;
    pid_t parent = getpid();
    int fd = -1;
    icebox_cpu_step_back(); // as icebox_spawn: the stand-in and the apps it clones get the daemon's own CPUs
    pid_t pid = icebox_clone3_pidfd(0, -1, &fd);
    if (pid == 0) {
        close(pair[0]);
        stand_in_main(pair[1], procs_fds, nprocs, parent);
    }
    int saved = errno;
    close(pair[1]);
    if (pid < 0) {
        close(pair[0]);
        errno = saved;
        return -1;
    }
    *pidfd = fd;
    *sock = pair[0];
    return pid;
}

// See icebox_shim.h for why this file exists. Everything the child runs between clone
// and execve is here and is async-signal-safe: raw syscalls only, no malloc, no locks.
#include "icebox_shim.h"
#include "spawn_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <link.h>
#include <nss.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

// Our own copy of the kernel's struct clone_args (v2, with the cgroup field, Linux 5.7),
// so the build does not depend on how new the installed kernel headers are.
struct icebox_clone_args {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
    uint64_t set_tid, set_tid_size, cgroup;
};

static void child_fail(int err_fd, int step, int err) {
    int msg[2] = {step, err};
    ssize_t ignored = write(err_fd, msg, sizeof msg);
    (void)ignored;
    _exit(127);
}

// The kernel's capability ABI (linux/capability.h), version 3: two 32-bit words per set.
// Our own copy, so that the child calls capset(2) directly: libcap's cap_set_proc
// allocates, which a child of a multithreaded process must not do.
#define ICEBOX_CAPABILITY_VERSION_3 0x20080522
struct icebox_cap_header { uint32_t version; int pid; };
struct icebox_cap_data { uint32_t effective, permitted, inheritable; };

// Runs in the child only: becomes req's uid, gid and groups with no capability left and
// no_new_privs set, or reports the step that failed (the program then never runs). Raw syscalls:
// glibc's set*id wrappers signal every thread they believe exists (the parent's, here) and take
// locks, and credentials are per thread in the kernel anyway; the child has one thread. The order
// matters: the bounding set can only be emptied while the child still has CAP_SETPCAP, that is
// before setresuid to a non-root uid clears it.
static void child_become(const struct icebox_spawn_request *req, int err_fd) {
    if (syscall(SYS_setgroups, req->ngroups, req->groups) < 0) child_fail(err_fd, ICEBOX_STEP_SETGROUPS, errno);
    if (syscall(SYS_setresgid, req->gid, req->gid, req->gid) < 0) child_fail(err_fd, ICEBOX_STEP_SETGID, errno);
    for (int cap = 0; cap <= req->cap_last_cap; cap++) {
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) child_fail(err_fd, ICEBOX_STEP_CAPBSET, errno);
    }
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0) child_fail(err_fd, ICEBOX_STEP_AMBIENT, errno);
    if (syscall(SYS_setresuid, req->uid, req->uid, req->uid) < 0) child_fail(err_fd, ICEBOX_STEP_SETUID, errno);
    // A change to a non-root uid has cleared permitted and effective already; inheritable
    // (and a uid of 0, which keeps everything) are cleared here.
    struct icebox_cap_header header = {ICEBOX_CAPABILITY_VERSION_3, 0};
    struct icebox_cap_data data[2] = {0};
    if (syscall(SYS_capset, &header, data) < 0) child_fail(err_fd, ICEBOX_STEP_CAPSET, errno);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) child_fail(err_fd, ICEBOX_STEP_NO_NEW_PRIVS, errno);

    // Read it all back: a kernel or security module that quietly ignored a step must not
    // leave the program with more than was asked.
    uid_t ruid, euid, suid;
    gid_t rgid, egid, sgid;
    if (syscall(SYS_getresuid, &ruid, &euid, &suid) < 0 || syscall(SYS_getresgid, &rgid, &egid, &sgid) < 0)
        child_fail(err_fd, ICEBOX_STEP_VERIFY, errno);
    if (ruid != req->uid || euid != req->uid || suid != req->uid || rgid != req->gid || egid != req->gid
        || sgid != req->gid)
        child_fail(err_fd, ICEBOX_STEP_VERIFY, EPERM);
    memset(data, 0xff, sizeof data);
    if (syscall(SYS_capget, &header, data) < 0) child_fail(err_fd, ICEBOX_STEP_VERIFY, errno);
    for (int i = 0; i < 2; i++) {
        if (data[i].effective || data[i].permitted || data[i].inheritable) child_fail(err_fd, ICEBOX_STEP_VERIFY, EPERM);
    }
    for (int cap = 0; cap <= req->cap_last_cap; cap++) {
        if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) != 0) child_fail(err_fd, ICEBOX_STEP_VERIFY, EPERM);
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0) > 0) child_fail(err_fd, ICEBOX_STEP_VERIFY, EPERM);
    }
    if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) child_fail(err_fd, ICEBOX_STEP_VERIFY, EPERM);
}

// The daemon's slice (icebox_set_latency_sensitive) is its own: fork and exec keep a custom
// slice, so the child puts back the default the daemon had before.
#define ICEBOX_SCHED_FLAG_RESET_ON_FORK 0x01
// Whether the daemon had no custom slice before icebox_set_latency_sensitive changed it: set
// once, before any spawn; read by children only.
static int original_slice_default;

// The thread's attributes when its policy is SCHED_OTHER or SCHED_BATCH, the ones with a slice and
// the only ones icebox changes: anything a user chose with chrt (real-time, deadline, idle) is left
// alone (-1, EINVAL).
static int sched_attr_get_fair(struct icebox_scheduling *attr) {
    memset(attr, 0, sizeof *attr);
    if (syscall(SYS_sched_getattr, 0, attr, sizeof *attr, 0) < 0) return -1;
    if (attr->policy != SCHED_OTHER && attr->policy != SCHED_BATCH) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}

static int sched_slice_set(uint64_t slice_ns) {
    struct icebox_scheduling attr;
    if (sched_attr_get_fair(&attr) < 0) return -1;
    attr.size = sizeof attr;
    attr.flags &= ICEBOX_SCHED_FLAG_RESET_ON_FORK; // the same nice and policy: no privilege needed
    attr.runtime = slice_ns;                       // 0: the kernel's default slice
    return (int)syscall(SYS_sched_setattr, 0, &attr, 0);
}

int icebox_set_latency_sensitive(uint64_t slice_ns) {
    // Before 6.12 the kernel ignores sched_runtime for these policies: nothing changes.
    if (sched_slice_set(slice_ns) < 0) return -1;
    original_slice_default = 1;
    return 0;
}

// Per thread, as the affinity itself is: `before` is the set the thread had, `aside` the one
// it was given, so a set someone else gave it meanwhile is left alone.
static _Thread_local struct {
    int active;
    cpu_set_t before, aside;
} step_aside;

int icebox_cpu_step_aside(void) {
    if (step_aside.active) return 1;
    if (sched_getaffinity(0, sizeof step_aside.before, &step_aside.before) < 0) return -1;
    int cpu = sched_getcpu();
    if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &step_aside.before) || CPU_COUNT(&step_aside.before) < 2)
        return 0;
    step_aside.aside = step_aside.before;
    CPU_CLR(cpu, &step_aside.aside);
    if (sched_setaffinity(0, sizeof step_aside.aside, &step_aside.aside) < 0) return -1;
    step_aside.active = 1;
    return 1;
}

void icebox_cpu_step_back(void) {
    if (!step_aside.active) return;
    step_aside.active = 0;
    cpu_set_t now;
    if (sched_getaffinity(0, sizeof now, &now) == 0 && CPU_EQUAL(&now, &step_aside.aside))
        (void)sched_setaffinity(0, sizeof step_aside.before, &step_aside.before);
}

int icebox_cpu_is_aside(void) { return step_aside.active; }

int icebox_preemption_off(struct icebox_scheduling *saved) {
    if (sched_attr_get_fair(saved) < 0) return -1;
    struct icebox_scheduling attr = {.size = sizeof attr, .policy = SCHED_FIFO, .priority = 1,
                                     .flags = ICEBOX_SCHED_FLAG_RESET_ON_FORK}; // never inherited, whatever happens
    return (int)syscall(SYS_sched_setattr, 0, &attr, 0);
}

int icebox_preemption_on(const struct icebox_scheduling *saved) {
    struct icebox_scheduling attr = *saved;
    attr.size = sizeof attr;
    attr.flags &= ICEBOX_SCHED_FLAG_RESET_ON_FORK; // as it was; change nothing else
    if (syscall(SYS_sched_setattr, 0, &attr, 0) == 0) return 0;
    // Never left real-time: leaving it is always allowed, if not with the old attributes.
    struct sched_param normal = {0};
    return sched_setscheduler(0, SCHED_OTHER, &normal);
}

// The CPUs a child pinned for its clone (see clone3_vfork) gets back just before its execve:
// `pinned` is the one-CPU set the clone gave it, `restore` the spawner's own set. Only a child
// still holding exactly `pinned` is changed: a clone into a cpuset cgroup gets that cgroup's CPUs
// from the kernel, which are the app's and stay as they are.
struct affinity_restore {
    cpu_set_t pinned, restore;
};

// Runs in the child only. Never returns.
static void child_main(const struct icebox_spawn_request *req, int err_fd, int go_fd,
                       const struct affinity_restore *affinity) {
    // Keep the error pipe out of the way of 0..3, which are about to be overwritten.
    err_fd = fcntl(err_fd, F_DUPFD_CLOEXEC, 10);
    if (err_fd < 0) _exit(127);

    if (go_fd >= 0) {
        // The fallback path: wait until the parent has moved us into the cgroup, so the
        // program never runs a single instruction outside it.
        char c = 0;
        ssize_t n;
        do { n = read(go_fd, &c, 1); } while (n < 0 && errno == EINTR);
        if (n != 1 || c != 'g') _exit(127);
    }

    // A clean signal state: the daemon blocks signals it reads through signalfd, and a
    // child inherits the mask and any ignored dispositions.
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int sig = 1; sig < NSIG; sig++) {
        if (sig == SIGKILL || sig == SIGSTOP) continue;
        sigaction(sig, &dfl, NULL); // fails harmlessly for glibc-internal signals
    }
    sigset_t empty;
    sigemptyset(&empty);
    sigprocmask(SIG_SETMASK, &empty, NULL);

    if (req->new_session && setsid() < 0) child_fail(err_fd, ICEBOX_STEP_SETSID, errno);
    if (req->nofile_soft > 0) {
        struct rlimit limit;
        if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && req->nofile_soft <= limit.rlim_max) {
            limit.rlim_cur = req->nofile_soft;
            setrlimit(RLIMIT_NOFILE, &limit);
        }
    }

    int src[4] = {req->stdin_fd, req->stdout_fd, req->stderr_fd, req->extra_fd};
    for (int i = 0; i < 4; i++) {
        if (src[i] < 0) {
            if (i == 3) continue;
            src[i] = open("/dev/null", O_RDWR | O_CLOEXEC);
        } else {
            // Duplicate above 10 first so that moving one descriptor into place cannot
            // clobber another source that happens to be numbered 0..3.
            src[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 10);
        }
        if (src[i] < 0) child_fail(err_fd, ICEBOX_STEP_DUP, errno);
    }
    for (int i = 0; i < 4; i++) {
        if (src[i] < 0) continue;
        if (dup2(src[i], i) < 0) child_fail(err_fd, ICEBOX_STEP_DUP, errno); // dup2 clears FD_CLOEXEC
    }
    // Nothing else leaks into the program: every other descriptor closes on exec.
    unsigned int first = req->extra_fd >= 0 ? 4 : 3;
    if (syscall(SYS_close_range, first, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
        for (int fd = (int)first; fd < 4096; fd++) fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    if (req->set_identity) child_become(req, err_fd);
    // After the change of identity: the directory must be one the app's user may enter.
    if (req->cwd && chdir(req->cwd) < 0) child_fail(err_fd, ICEBOX_STEP_CHDIR, errno);
    if (original_slice_default) sched_slice_set(0);
    if (affinity) {
        // Last, so the load balancer cannot move the child before its execve has begun
        // (exec's own balancing leaves a task on a CPU that is busy with nothing else).
        cpu_set_t now;
        if (sched_getaffinity(0, sizeof now, &now) == 0 && CPU_EQUAL(&now, &affinity->pinned) &&
            sched_setaffinity(0, sizeof affinity->restore, &affinity->restore) < 0)
            child_fail(err_fd, ICEBOX_STEP_AFFINITY, errno);
    }

    execve(req->path, req->argv, req->envp);
    child_fail(err_fd, ICEBOX_STEP_EXEC, errno);
}

static struct icebox_clone_args clone_args(uint64_t flags, int cgroup_fd, int *pidfd) {
    // With CLONE_PARENT the kernel wants an exit signal of 0: the child's is the caller's own
    // (SIGCHLD, as the caller was made with it).
    return (struct icebox_clone_args){.flags = CLONE_PIDFD | flags, .pidfd = (uint64_t)(uintptr_t)pidfd,
                                      .exit_signal = (flags & CLONE_PARENT) ? 0 : SIGCHLD,
                                      .cgroup = (flags & CLONE_INTO_CGROUP) ? (uint64_t)cgroup_fd : 0};
}

pid_t icebox_clone3_pidfd(uint64_t extra_flags, int cgroup_fd, int *pidfd) {
    struct icebox_clone_args args = clone_args(extra_flags, cgroup_fd, pidfd);
    return (pid_t)syscall(SYS_clone3, &args, sizeof args);
}

#if defined(__x86_64__)
// clone3 with CLONE_VM | CLONE_VFORK, as posix_spawn does with clone: no copy of this process's
// page tables, which for a daemon of tens of MiB cost milliseconds per spawn (and as much again to
// tear down at the child's execve). The child runs fn(arg) on a stack of its own in this address
// space; this thread sleeps until the child has run execve or exited. Every signal is blocked
// across the call (the raw syscall: glibc's wrapper keeps its own signals unblocked), so no handler
// of this process ever runs on the child's stack; child_main sets every disposition to the default
// before it unblocks. The child also shares this thread's errno: the parent's is set from the
// result here, after.
//
// The caller is pinned to the CPU it runs on for the clone, and the child starts there (`affinity`
// says what the child gives back before its execve; NULL: no pin). Unpinned, the kernel's fork
// balancing puts a new task on the idlest CPU, asleep on an idle machine, and on a VM woken through
// the hypervisor: 1.6 ms a clone3 unpinned, 0.4–0.5 ms pinned.
#define ICEBOX_HAVE_CLONE3_VFORK 1
static int pin_to_this_cpu(struct affinity_restore *affinity) {
    if (sched_getaffinity(0, sizeof affinity->restore, &affinity->restore) < 0) return 0;
    int cpu = sched_getcpu();
    if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &affinity->restore) || CPU_COUNT(&affinity->restore) < 2)
        return 0;
    CPU_ZERO(&affinity->pinned);
    CPU_SET(cpu, &affinity->pinned);
    return sched_setaffinity(0, sizeof affinity->pinned, &affinity->pinned) == 0;
}

static pid_t clone3_vfork(uint64_t flags, int cgroup_fd, int *pidfd, int (*fn)(void *), void *arg,
                          const struct affinity_restore *pinned) {
    const size_t size = 256 * 1024;
    void *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) return -1;
    struct icebox_clone_args args = clone_args(CLONE_VM | CLONE_VFORK | flags, cgroup_fd, pidfd);
    args.stack = (uint64_t)(uintptr_t)stack; // the kernel starts the child at stack + stack_size
    args.stack_size = size;
    uint64_t all = ~0ULL, old = 0;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, sizeof all);
    long ret;
    register long fn_reg __asm__("r12") = (long)fn;
    register long arg_reg __asm__("r13") = (long)arg;
    __asm__ volatile(
        "syscall\n\t"
        "testq %%rax, %%rax\n\t"
        "jnz 1f\n\t"
        // The child, on its own stack (16-byte aligned: the call leaves it as the ABI wants).
        "xorl %%ebp, %%ebp\n\t"
        "movq %%r13, %%rdi\n\t"
        "callq *%%r12\n\t"
        "movl %%eax, %%edi\n\t"
        "movl $60, %%eax\n\t" // exit(2): fn never returns, but if it did
        "syscall\n\t"
        "hlt\n\t"
        "1:\n\t"
        : "=a"(ret)
        : "0"((long)SYS_clone3), "D"(&args), "S"(sizeof args), "r"(fn_reg), "r"(arg_reg)
        : "rcx", "r11", "memory");
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof old);
    if (pinned) sched_setaffinity(0, sizeof pinned->restore, &pinned->restore);
    munmap(stack, size); // the child has left it: it ran execve (a new address space) or exited
    if (ret < 0) {
        errno = (int)-ret;
        return -1;
    }
    return (pid_t)ret;
}

struct vfork_child {
    const struct icebox_spawn_request *req;
    int err_read, err_write;
    const struct affinity_restore *affinity;
};

static int vfork_child_main(void *p) {
    struct vfork_child *c = p;
    close(c->err_read); // the child's own descriptor table: the parent keeps its copy
    child_main(c->req, c->err_write, -1, c->affinity);
    return 127;
}
#endif

static int close_pair_and_fail(int a[2], int b[2]) {
    int saved = errno;
    if (a[0] >= 0) { close(a[0]); close(a[1]); }
    if (b[0] >= 0) { close(b[0]); close(b[1]); }
    errno = saved;
    return -1;
}

static int write_pid(int fd, pid_t pid) {
    char buf[32];
    int len = snprintf(buf, sizeof buf, "%d", (int)pid);
    return pwrite(fd, buf, (size_t)len, 0) < 0 ? errno : 0;
}

// A child this process may not reap (CLONE_PARENT made it its parent's) is handed over
// through its pidfd instead: the caller reaps it.
static void reap_or_hand_over(pid_t pid, int pidfd, int clone_parent, struct icebox_spawn_result *result) {
    if (clone_parent) {
        result->pidfd = pidfd;
        return;
    }
    siginfo_t info;
    while (waitid(P_PID, (id_t)pid, &info, WEXITED) < 0 && errno == EINTR) {}
    if (pidfd >= 0) close(pidfd);
    result->pidfd = -1;
}

int icebox_spawn(const struct icebox_spawn_request *req, struct icebox_spawn_result *result) {
    icebox_cpu_step_back(); // a child starts with the CPUs its spawner has, not the ones it was set aside to
    return icebox_spawn_as(req, result, 0, NULL);
}

int icebox_spawn_as(const struct icebox_spawn_request *req, struct icebox_spawn_result *result, int clone_parent,
                    int *err_read) {
    // The new PID namespace (if asked for) travels with every clone3 below, as the parent flag.
    uint64_t parent_flag = (clone_parent ? CLONE_PARENT : 0) | (req->new_pid_namespace ? CLONE_NEWPID : 0);
    memset(result, 0, sizeof *result);
    result->pidfd = -1;
    int err_pipe[2] = {-1, -1}, go_pipe[2] = {-1, -1};
    if (pipe2(err_pipe, O_CLOEXEC) < 0) return -1;
    // The child waits on the go pipe until the parent has moved it into a v1 cgroup (or, on
    // the fallback path, its v2 cgroup), so the program never runs outside them. A child
    // that clone3 placed in its only cgroup has nothing to wait for: no pipe, no round trip.
    int v1_moves = req->v1_procs_fd >= 0 || req->v1_memory_procs_fd >= 0;
    if (v1_moves && pipe2(go_pipe, O_CLOEXEC) < 0) return close_pair_and_fail(err_pipe, go_pipe);

    int pidfd = -1;
    pid_t pid = -1;
    int method = 0;
#ifdef ICEBOX_HAVE_CLONE3_VFORK
    // Nothing to do between the clone and the child's execve (no move): no fork needed.
    if (!v1_moves && (req->cgroup_fd >= 0 || req->cgroup_procs_fd < 0)) {
        struct affinity_restore affinity;
        int pinned = pin_to_this_cpu(&affinity);
        struct vfork_child child = {
            .req = req, .err_read = err_pipe[0], .err_write = err_pipe[1], .affinity = pinned ? &affinity : NULL};
        uint64_t into = req->cgroup_fd >= 0 ? CLONE_INTO_CGROUP : 0;
        pid = clone3_vfork(into | parent_flag, req->cgroup_fd, &pidfd, vfork_child_main, &child, child.affinity);
        method = into ? ICEBOX_SPAWN_CLONE3_INTO_CGROUP : ICEBOX_SPAWN_CLONE3_THEN_MOVE;
        result->vforked = pid > 0;
        if (pid < 0 && errno != ENOSYS && errno != E2BIG && errno != EINVAL)
            return close_pair_and_fail(err_pipe, go_pipe);
        // Made: the parent's part below, as for a fork (there is no go pipe).
    }
#endif
    if (pid < 0 && req->cgroup_fd >= 0) {
        pid = icebox_clone3_pidfd(CLONE_INTO_CGROUP | parent_flag, req->cgroup_fd, &pidfd);
        method = ICEBOX_SPAWN_CLONE3_INTO_CGROUP;
        // ENOSYS: no clone3 (before 5.3); E2BIG: a kernel that does not know the cgroup
        // field (before 5.7); EINVAL: flag unknown. Then fall back to moving the child.
        if (pid < 0 && errno != ENOSYS && errno != E2BIG && errno != EINVAL)
            return close_pair_and_fail(err_pipe, go_pipe);
    }
    if (pid < 0) {
        if (go_pipe[0] < 0 && req->cgroup_procs_fd >= 0 && pipe2(go_pipe, O_CLOEXEC) < 0)
            return close_pair_and_fail(err_pipe, go_pipe);
        pid = icebox_clone3_pidfd(parent_flag, -1, &pidfd);
        method = ICEBOX_SPAWN_CLONE3_THEN_MOVE;
        if (pid < 0 && errno == ENOSYS && !clone_parent && !req->new_pid_namespace) {
            pid = fork();
            method = ICEBOX_SPAWN_FORK_THEN_MOVE;
        }
    }
    if (pid < 0) return close_pair_and_fail(err_pipe, go_pipe);
    if (pid == 0) {
        close(err_pipe[0]);
        if (go_pipe[1] >= 0) close(go_pipe[1]);
        child_main(req, err_pipe[1], go_pipe[0], NULL);
    }

    // Parent.
    close(err_pipe[1]);
    if (method == ICEBOX_SPAWN_FORK_THEN_MOVE) pidfd = icebox_pidfd_open(pid, 0);
    result->pid = pid;
    result->method = method;
    if (go_pipe[0] >= 0) {
        close(go_pipe[0]);
        int move_errno = 0;
        if (method != ICEBOX_SPAWN_CLONE3_INTO_CGROUP && req->cgroup_procs_fd >= 0)
            move_errno = write_pid(req->cgroup_procs_fd, pid);
        if (!move_errno && req->v1_procs_fd >= 0) move_errno = write_pid(req->v1_procs_fd, pid);
        if (!move_errno && req->v1_memory_procs_fd >= 0) move_errno = write_pid(req->v1_memory_procs_fd, pid);
        if (move_errno) {
            kill(pid, SIGKILL);
            close(go_pipe[1]);
            close(err_pipe[0]);
            reap_or_hand_over(pid, pidfd, clone_parent, result);
            result->child_errno = move_errno;
            result->failed_step = ICEBOX_STEP_CGROUP;
            return 0;
        }
        ssize_t ignored = write(go_pipe[1], "g", 1);
        (void)ignored;
        close(go_pipe[1]);
    }

    if (err_read) {
        *err_read = err_pipe[0];
        result->pidfd = pidfd;
        return 0;
    }
    icebox_spawn_await_exec(err_pipe[0], pidfd, clone_parent, result);
    return 0;
}

void icebox_spawn_await_exec(int err_read, int pidfd, int clone_parent, struct icebox_spawn_result *result) {
    // After a vfork a failure is in the pipe already (written before the child's exit); an
    // empty pipe is an execve past its point of no return. Waiting for the end of file would
    // bring a "sync" wake-up when exec closes the descriptors: the scheduler pulls this process
    // onto the new program's CPU, which keeps it through its whole start (~1 ms) first.
    int queued = 0;
    if (result->vforked && ioctl(err_read, FIONREAD, &queued) == 0 && queued == 0) {
        close(err_read);
        result->pidfd = pidfd;
        return;
    }
    int msg[2] = {0, 0};
    ssize_t n;
    do { n = read(err_read, msg, sizeof msg); } while (n < 0 && errno == EINTR);
    close(err_read);
    if (n == (ssize_t)sizeof msg) {
        // The child reported a failure before or at execve and exits 127: reap it now so
        // the caller never sees a launch that "died".
        reap_or_hand_over(result->pid, pidfd, clone_parent, result);
        result->failed_step = msg[0];
        result->child_errno = msg[1];
        return;
    }
    result->pidfd = pidfd;
}

// PIDFD_GET_INFO's struct (Linux 6.13), defined here: the headers glibc 2.36 builds against
// predate it. The kernel takes any size from the first version's 64 bytes up.
struct icebox_pidfd_info {
    uint64_t mask;
    uint64_t cgroupid;
    uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
    int32_t exit_code;
};
#define ICEBOX_PIDFD_GET_INFO _IOWR(0xFF, 11, struct icebox_pidfd_info)
#define ICEBOX_PIDFD_INFO_CGROUPID (1ULL << 2)

int icebox_pidfd_cgroup_id(int pidfd, uint64_t *id) {
    struct icebox_pidfd_info info = {.mask = ICEBOX_PIDFD_INFO_CGROUPID};
    if (ioctl(pidfd, ICEBOX_PIDFD_GET_INFO, &info) < 0) return -1;
    if (!(info.mask & ICEBOX_PIDFD_INFO_CGROUPID)) {
        errno = EOPNOTSUPP;
        return -1;
    }
    *id = info.cgroupid;
    return 0;
}

int icebox_pidfd_open(pid_t pid, unsigned int flags) { return (int)syscall(SYS_pidfd_open, pid, flags); }

int icebox_pidfd_send_signal(int pidfd, int sig) { return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0); }

int icebox_tgkill(pid_t tgid, pid_t tid, int sig) { return (int)syscall(SYS_tgkill, tgid, tid, sig); }

static int waitid_fill(idtype_t type, id_t id, int options, int *code, int *status, pid_t *pid) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    int rc;
    do { rc = waitid(type, id, &info, options); } while (rc < 0 && errno == EINTR);
    if (rc < 0) return -1;
    *code = info.si_code;
    *status = info.si_status;
    *pid = info.si_pid;
    return 0;
}

int icebox_waitid_pidfd(int pidfd, int options, int *code, int *status, pid_t *pid) {
    return waitid_fill((idtype_t)P_PIDFD, (id_t)pidfd, options, code, status, pid);
}

int icebox_waitid_all(int options, int *code, int *status, pid_t *pid) {
    return waitid_fill(P_ALL, 0, options, code, status, pid);
}

int icebox_set_child_subreaper(void) { return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); }

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
int icebox_rename_exchange_at(int dirfd, const char *a, const char *b) {
    return (int)syscall(SYS_renameat2, dirfd, a, dirfd, b, RENAME_EXCHANGE);
}

int icebox_epoll_wait_ns(int epfd, struct epoll_event *events, int max, int64_t timeout_ns) {
#ifdef SYS_epoll_pwait2
    static int unsupported;
    if (!unsupported) {
        struct timespec ts = {.tv_sec = timeout_ns / 1000000000, .tv_nsec = timeout_ns % 1000000000};
        long n = syscall(SYS_epoll_pwait2, epfd, events, max, timeout_ns < 0 ? NULL : &ts, NULL, 0);
        if (n >= 0 || errno != ENOSYS) return (int)n;
        unsupported = 1;
    }
#endif
    int ms = timeout_ns < 0 ? -1 : (int)(timeout_ns > 60000000000LL ? 60000 : (timeout_ns + 999999) / 1000000);
    return epoll_wait(epfd, events, max, ms);
}
ssize_t icebox_send_with_fds(int sock, const void *buf, size_t len, const int *fds, int nfds) {
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    char control[CMSG_SPACE(sizeof(int) * 16)];
    if (fds && nfds > 0) {
        if (nfds > 16) { errno = EINVAL; return -1; }
        memset(control, 0, sizeof control);
        msg.msg_control = control;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
    }
    ssize_t n;
    do { n = sendmsg(sock, &msg, MSG_NOSIGNAL); } while (n < 0 && errno == EINTR);
    return n;
}

ssize_t icebox_recv_with_fds_creds(int sock, void *buf, size_t len, int *fds, int max_fds, int *nfds,
                                   pid_t *pid, uid_t *uid) {
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    union {
        char buf[CMSG_SPACE(sizeof(int) * 16) + CMSG_SPACE(sizeof(struct ucred))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf, .msg_controllen = sizeof control.buf};
    *nfds = 0;
    *pid = -1;
    *uid = (uid_t)-1;
    ssize_t n;
    do { n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT); } while (n < 0 && errno == EINTR);
    if (n < 0) return -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET) continue;
        if (c->cmsg_type == SCM_RIGHTS) {
            int count = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            int *received = (int *)CMSG_DATA(c);
            for (int i = 0; i < count; i++) {
                if (fds && *nfds < max_fds) fds[(*nfds)++] = received[i];
                else close(received[i]); // more than the caller wants: never leak them
            }
        } else if (c->cmsg_type == SCM_CREDENTIALS) {
            struct ucred cred;
            memcpy(&cred, CMSG_DATA(c), sizeof cred);
            *pid = cred.pid;
            *uid = cred.uid;
        }
    }
    return n;
}

int icebox_nsig(void) { return NSIG; }
int icebox_sigrtmin(void) { return SIGRTMIN; }
int icebox_sigrtmax(void) { return SIGRTMAX; }

int icebox_accept(int listener) { return accept4(listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK); }

int icebox_peer_cred(int sock, pid_t *pid, uid_t *uid, gid_t *gid) {
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) return -1;
    *pid = cred.pid;
    *uid = cred.uid;
    *gid = cred.gid;
    return 0;
}

int icebox_poll_ns(int fd, short events, uint64_t timeout_ns) {
    struct pollfd pfd = {.fd = fd, .events = events, .revents = 0};
    struct timespec ts = {.tv_sec = (time_t)(timeout_ns / 1000000000ULL), .tv_nsec = (long)(timeout_ns % 1000000000ULL)};
    int rc = ppoll(&pfd, 1, &ts, NULL);
    if (rc < 0) return errno == EINTR ? 0 : -1;
    return rc == 0 ? 0 : pfd.revents;
}

int icebox_pipe_cloexec(int *fds) { return pipe2(fds, O_CLOEXEC); }

int icebox_static_nss_files_only(void) {
    if (getauxval(AT_BASE) != 0) return 0;
    __nss_configure_lookup("passwd", "files");
    __nss_configure_lookup("group", "files");
    __nss_configure_lookup("initgroups", "files");
    return 1;
}

#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif

ssize_t icebox_process_madvise(int pidfd, const struct iovec *iov, size_t n, int advice) {
    return (ssize_t)syscall(SYS_process_madvise, pidfd, iov, n, advice, 0U);
}

/* The program's own loadable segments, locked in memory (see icebox_lock_program_image). */
struct icebox_image_lock {
    size_t locked;
    int err;
};

static int icebox_lock_segments(struct dl_phdr_info *info, size_t size, void *data) {
    struct icebox_image_lock *state = data;
    (void)size;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || ph->p_memsz == 0) continue;
        uintptr_t start = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);
        uintptr_t end = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + page - 1) & ~(page - 1);
        if (mlock((void *)start, end - start) != 0) {
            state->err = errno;
            return 1;
        }
        state->locked += end - start;
    }
    return 1; /* the first object is the program itself: stop there */
}

long long icebox_lock_program_image(void) {
    struct icebox_image_lock state = {0, 0};
    dl_iterate_phdr(icebox_lock_segments, &state);
    if (state.err != 0) {
        munlockall(); /* nothing else of ours is locked: no half-locked image */
        errno = state.err;
        return -1;
    }
    return (long long)state.locked;
}

// Weak: only the icebox executable defines it (CIceboxStart/pid_namespace_init.c).
extern const int icebox_start_pid_namespace_init __attribute__((weak));

int icebox_executable_has_pid_namespace_init(void) { return &icebox_start_pid_namespace_init != NULL; }

// The small C layer icebox needs: only what Swift cannot do itself.
//  - the child side of a spawn, from clone to execve (a multithreaded Swift process may
//    only run async-signal-safe code in a forked child);
//  - syscalls Glibc 2.36 does not wrap (pidfd_open, pidfd_send_signal, clone3);
//  - macro-only APIs (CMSG_*) for SCM_RIGHTS and SCM_CREDENTIALS.
#ifndef ICEBOX_SHIM_H
#define ICEBOX_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/xattr.h> // getxattr, which Swift's Glibc module does not import

#pragma clang assume_nonnull begin

/// How a spawn placed the child into its cgroup (reported for the event log).
enum icebox_spawn_method {
    ICEBOX_SPAWN_CLONE3_INTO_CGROUP = 1, // clone3(CLONE_INTO_CGROUP | CLONE_PIDFD)
    ICEBOX_SPAWN_CLONE3_THEN_MOVE = 2,   // clone3(CLONE_PIDFD), then a write to cgroup.procs
    ICEBOX_SPAWN_FORK_THEN_MOVE = 3,     // fork + pidfd_open, then a write to cgroup.procs
    ICEBOX_SPAWN_STAND_IN_INTO_CGROUP = 4, // by a stand-in (icebox_stand_in.h), clone3(CLONE_INTO_CGROUP)
    ICEBOX_SPAWN_STAND_IN = 5,             // by a stand-in, no v2 cgroup: its v1 ones inherited
};

struct icebox_spawn_request {
    const char *path;                   // absolute path of the program (resolved by the caller)
    char *_Nullable const *_Nullable argv;        // NULL-terminated
    char *_Nullable const *_Nullable envp;        // NULL-terminated
    const char *_Nullable cwd;          // NULL: inherit
    int stdin_fd, stdout_fd, stderr_fd; // descriptors to become 0, 1, 2 (-1: /dev/null)
    int extra_fd;                       // descriptor to become 3 in the child (-1: none)
    int cgroup_fd;                      // O_DIRECTORY fd of a cgroup v2 dir (-1: none)
    int cgroup_procs_fd;                // that cgroup's cgroup.procs opened O_WRONLY (-1: none), for the fallback
    int v1_procs_fd;                    // a v1 cgroup.procs (the v1 freezer) to join before execve (-1: none)
    int v1_memory_procs_fd;             // a second v1 cgroup.procs (the v1 memory cgroup) likewise (-1: none)
    int new_session;                    // 1: setsid() in the child
    uint64_t nofile_soft;               // >0: the child's soft RLIMIT_NOFILE (the daemon raised its own)
    // Another identity (--user): when set_identity is 1 the child, before execve, takes these
    // groups, gid and uid and gives up every capability (bounding, ambient, permitted, effective,
    // inheritable) and sets no_new_privs. Prepared by the parent: the child may not allocate.
    int set_identity;
    uid_t uid;
    gid_t gid;
    const gid_t *_Nullable groups;      // supplementary groups (ngroups of them; none: NULL, 0)
    size_t ngroups;
    int cap_last_cap;                   // /proc/sys/kernel/cap_last_cap, read by the parent
    // 1: the child is pid 1 of a new PID namespace (CLONE_NEWPID; SpawnRequest.newPIDNamespace says
    // why). Only by clone3: without it the spawn fails (ENOSYS) rather than fall back to fork.
    int new_pid_namespace;
};

/// The step of a spawn that failed (icebox_spawn_result.failed_step).
enum icebox_spawn_step {
    ICEBOX_STEP_CHDIR = 1,
    ICEBOX_STEP_SETSID = 2,
    ICEBOX_STEP_DUP = 3,
    ICEBOX_STEP_EXEC = 4,
    ICEBOX_STEP_CGROUP = 5,
    ICEBOX_STEP_SETGROUPS = 6,   // setgroups(2) to the supplementary groups
    ICEBOX_STEP_SETGID = 7,      // setresgid(2)
    ICEBOX_STEP_CAPBSET = 8,     // prctl(PR_CAPBSET_DROP) of every capability
    ICEBOX_STEP_AMBIENT = 9,     // prctl(PR_CAP_AMBIENT_CLEAR_ALL)
    ICEBOX_STEP_SETUID = 10,     // setresuid(2)
    ICEBOX_STEP_CAPSET = 11,     // capset(2) to empty permitted, effective, inheritable sets
    ICEBOX_STEP_NO_NEW_PRIVS = 12, // prctl(PR_SET_NO_NEW_PRIVS)
    ICEBOX_STEP_VERIFY = 13,     // reading back ids and capabilities found something left
    ICEBOX_STEP_AFFINITY = 14,   // sched_setaffinity(2) back to the CPUs the spawner may use
};

struct icebox_spawn_result {
    pid_t pid;
    int pidfd;
    int method;      // enum icebox_spawn_method
    int child_errno; // 0: execve succeeded; else the errno of the step that failed
    int failed_step; // enum icebox_spawn_step
    int vforked;     // 1: the spawner was a vfork parent (icebox_spawn_await_exec reads the pipe at once)
};

/// Spawns a child. Returns 0 (result filled; child_errno may say exec failed, in which case the
/// child has been reaped already and pidfd is -1), or -1 with errno set when the spawn itself
/// failed.
int icebox_spawn(const struct icebox_spawn_request *req, struct icebox_spawn_result *result);

/// The id of the cgroup v2 the pidfd's process is in (the cgroup directory's inode number), through
/// PIDFD_GET_INFO (Linux 6.13). -1 with errno (ENOTTY, EINVAL: an older kernel; ESRCH: the process
/// is gone).
int icebox_pidfd_cgroup_id(int pidfd, uint64_t *_Nonnull id);
int icebox_pidfd_open(pid_t pid, unsigned int flags);
int icebox_pidfd_send_signal(int pidfd, int sig);
/// tgkill(2): a signal to one thread of a process (glibc 2.36 declares it only for _GNU_SOURCE).
int icebox_tgkill(pid_t tgid, pid_t tid, int sig);
/// waitid(P_PIDFD, pidfd, ...). options as for waitid. Returns 0 or -1 with errno.
int icebox_waitid_pidfd(int pidfd, int options, int *_Nonnull code, int *_Nonnull status, pid_t *_Nonnull pid);
/// waitid(P_ALL, ...): fills pid 0 when no child is waitable.
int icebox_waitid_all(int options, int *_Nonnull code, int *_Nonnull status, pid_t *_Nonnull pid);
int icebox_set_child_subreaper(void);
/// For the daemon (SchedulerLatency): a scheduler slice of slice_ns (EEVDF, Linux 6.12+; ignored
/// before). Every child spawned afterwards puts the default back before its execve. 0, or -1 with
/// errno (a policy without a slice: left alone).
int icebox_set_latency_sensitive(uint64_t slice_ns);
/// A thread's scheduling attributes (the kernel's struct sched_attr, SCHED_ATTR_SIZE_VER0).
struct icebox_scheduling {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
};
/// For the daemon (PreemptionGuard): the calling thread at SCHED_FIFO 1 (reset on fork); what it
/// ran before goes in *saved. 0, or -1 with errno (EPERM without CAP_SYS_NICE or an RLIMIT_RTPRIO;
/// EINVAL under a policy other than SCHED_OTHER or SCHED_BATCH, left alone). icebox_preemption_on
/// puts back the policy, nice and slice in *saved (or, should the kernel refuse them, plain
/// SCHED_OTHER): only after an _off that returned 0.
int icebox_preemption_off(struct icebox_scheduling *_Nonnull saved);
int icebox_preemption_on(const struct icebox_scheduling *_Nonnull saved);
/// For the daemon while a freeze waits (CPUStepAside): the calling thread may no longer run on the
/// CPU it is on (1; 0 with one CPU allowed, -1 with errno). icebox_cpu_step_back gives back the set
/// it had (unless someone changed it meanwhile); icebox_spawn and icebox_stand_in_start do so
/// first, so no child inherits the narrowed set. Per thread.
int icebox_cpu_step_aside(void);
void icebox_cpu_step_back(void);
int icebox_cpu_is_aside(void);
/// renameat2(RENAME_EXCHANGE) of two names in one open directory: swaps them atomically.
int icebox_rename_exchange_at(int dirfd, const char *_Nonnull a, const char *_Nonnull b);
/// epoll_pwait2: a timeout in nanoseconds (< 0: none); falls back to epoll_wait in whole
/// milliseconds, rounded up, on a kernel without it (before 5.11).
int icebox_epoll_wait_ns(int epfd, struct epoll_event *events, int max, int64_t timeout_ns);
/// 1 when this executable carries the init of a --pid-namespace app (the `icebox` executable:
/// `/proc/self/exe --pid-namespace-init PROGRAM ARGV...` runs it), 0 in a program that only links
/// the libraries.
int icebox_executable_has_pid_namespace_init(void);

/// Sends a message with descriptors attached (SCM_RIGHTS). Returns bytes sent or -1.
ssize_t icebox_send_with_fds(int sock, const void *buf, size_t len, const int *_Nullable fds, int nfds);
/// Receives a message; up to max_fds descriptors (made close-on-exec) land in fds.
/// *nfds gets their count; the pid/uid of SCM_CREDENTIALS land in *pid and *uid (or -1).
ssize_t icebox_recv_with_fds_creds(int sock, void *buf, size_t len, int *_Nullable fds, int max_fds,
                                   int *_Nonnull nfds, pid_t *_Nonnull pid, uid_t *_Nonnull uid);

/// accept4(SOCK_CLOEXEC | SOCK_NONBLOCK): glibc only declares it with _GNU_SOURCE.
int icebox_accept(int listener);
/// SO_PEERCRED (struct ucred is also _GNU_SOURCE-only).
int icebox_peer_cred(int sock, pid_t *_Nonnull pid, uid_t *_Nonnull uid, gid_t *_Nonnull gid);

/// poll(2) on one descriptor with a nanosecond timeout (ppoll is _GNU_SOURCE-only).
/// Returns revents, 0 on time-out, -1 on error.
int icebox_poll_ns(int fd, short events, uint64_t timeout_ns);

/// pipe2(O_CLOEXEC) (declared only with _GNU_SOURCE).
int icebox_pipe_cloexec(int *_Nonnull fds);

// In a static executable (no program interpreter), points the passwd, group and initgroups lookups
// at the files database built into libc and returns 1; elsewhere does nothing and returns 0. A
// static glibc would otherwise dlopen the NSS modules nsswitch.conf names, with a second libc
// beside the static one: libnss_systemd crashed in it (SIGSEGV) for any name /etc/passwd lacks.
int icebox_static_nss_files_only(void);

/// Number of signals (NSIG).
int icebox_nsig(void);
/// SIGRTMIN at run time (a glibc function behind a macro).
int icebox_sigrtmin(void);
int icebox_sigrtmax(void);

/// process_madvise(2) (syscall 440, Linux 5.10; glibc 2.36 has no wrapper) of the process
/// behind `pidfd`: the bytes advised, or -1 with errno (ProcessMadvise.advise tells how).
ssize_t icebox_process_madvise(int pidfd, const struct iovec *iov, size_t n, int advice);

/// Locks the program's own loadable segments (its code, read-only data, data and bss) in
/// memory with mlock(2), faulting them in: the bytes locked, or -1 with errno (EPERM or
/// ENOMEM past RLIMIT_MEMLOCK without CAP_IPC_LOCK; nothing stays locked then).
long long icebox_lock_program_image(void);

/// Puts the terminal on `fd` in raw mode (no echo, no line editing, no signals from keys, output
/// processing kept) after saving its settings, and keeps, where a signal handler can reach them,
/// those settings and `leave` (the bytes that leave the view; copied, at most 256). Until
/// icebox_terminal_restore, a crash (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP) restores
/// the terminal first, async-signal-safe, then goes on to the handler that was there before
/// (Swift's backtracer, or the default). 0, or -1 with errno (ENOTTY: not a terminal).
int icebox_terminal_raw(int fd, const char *leave, size_t leave_len);

/// Writes the `leave` bytes and puts the saved settings back (TCSAFLUSH: typed-ahead keys
/// are dropped, not handed to the shell); idempotent, async-signal-safe, and the crash
/// handlers are removed. Returns 0, or -1 with errno of a tcsetattr that failed.
int icebox_terminal_restore(void);

#pragma clang assume_nonnull end
#endif

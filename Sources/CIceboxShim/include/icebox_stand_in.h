// Spawn stand-ins: children of the daemon that join an app's v1 cgroups ahead of time and, when a
// launch comes, clone the app (CLONE_PARENT, so it is the daemon's child) with those memberships
// inherited.
//
// Why: every write to a cgroup.procs takes the kernel's cgroup_threadgroup_rwsem for writing, and
// when none was taken recently that waits for an RCU grace period (about 6 ms here). A launch on a
// hybrid or v1 host had to make one (the v1 memory cgroup, the v1 freezer) with the new process
// waiting before its execve. A stand-in pays it before the launch is asked for;
// clone3(CLONE_INTO_CGROUP) places the app in its v2 cgroup without a write at all.
#ifndef ICEBOX_STAND_IN_H
#define ICEBOX_STAND_IN_H

#include "icebox_shim.h"

#pragma clang assume_nonnull begin

/// Starts a stand-in: a fork of this process that writes itself into each cgroup.procs of procs_fds
/// (v1 cgroup.procs files opened for writing; the caller closes its copies), keeps nothing else of
/// this process open, sends one ready message (icebox_stand_in_ready) and waits for one spawn
/// request on its socket. It dies with the thread that started it (PR_SET_PDEATHSIG) and exits when
/// its socket is closed. Returns its pid (its pidfd and the daemon's end of its socket in *pidfd
/// and *sock), or -1 with errno.
pid_t icebox_stand_in_start(const int *procs_fds, int nprocs, int *pidfd, int *sock);

/// Reads the stand-in's ready message without blocking: 1 with *attach_errno (0: it is in
/// every cgroup; else the errno of the write that failed, and it exits), 0 when not there
/// yet, -1 with errno when the stand-in is gone (EPIPE) or the read failed.
int icebox_stand_in_ready(int sock, int *attach_errno);

/// Sends the stand-in req to spawn (its v1 descriptors are ignored: the stand-in is in those
/// cgroups already); the descriptors in req are the stand-in's copies once this returns. It does
/// not wait for the stand-in (the request is the only message it is ever sent). Returns 0, or -1
/// with errno (EPIPE: it is gone); the stand-in then exits.
int icebox_stand_in_send(int sock, const struct icebox_spawn_request *req);

/// The outcome of the request icebox_stand_in_send sent, read without waiting for the stand-in: 0
/// when it has not answered yet (poll sock for POLLIN); 1 with result filled, as icebox_spawn does,
/// except that a child that failed before its execve is not reaped: its pidfd is in result->pidfd
/// for the caller to reap (it is the caller's child); -1 with errno when the stand-in could not
/// spawn at all: EPIPE (it is gone), ENOSYS (no clone3 here), or another errno of its clone3. A
/// child cloned without a vfork is waited for until its execve, as icebox_spawn waits. After a
/// spawn the stand-in waits until the caller shuts `sock` down (at most 5 s) before it exits
/// (stand_in_main says why).
int icebox_stand_in_result(int sock, struct icebox_spawn_result *result);

#pragma clang assume_nonnull end
#endif

// What shim.c shares with stand_in.c, not with Swift.
#ifndef ICEBOX_SPAWN_INTERNAL_H
#define ICEBOX_SPAWN_INTERNAL_H

#include "icebox_shim.h"

/// clone3 with CLONE_PIDFD (and extra_flags; cgroup_fd for CLONE_INTO_CGROUP), exit signal SIGCHLD.
/// Returns as fork does.
pid_t icebox_clone3_pidfd(uint64_t extra_flags, int cgroup_fd, int *pidfd);

/// icebox_spawn, and with clone_parent the child is made with CLONE_PARENT: it becomes the caller's
/// parent's child, so the caller cannot reap it. A child that failed before its execve is then
/// handed back through result->pidfd (not reaped); only clone3 is tried. With err_read, it returns
/// once the child is made (result->pid, pidfd and method set), leaving the wait for its execve to
/// whoever reads *err_read (icebox_spawn_await_exec).
int icebox_spawn_as(const struct icebox_spawn_request *req, struct icebox_spawn_result *result, int clone_parent,
                    int *err_read);

/// Waits until the child result->pid has run its execve (err_read, the read end of its error pipe,
/// reaches end of file) or reported the step that failed; closes err_read. A failed child is reaped
/// (clone_parent: handed over in result->pidfd). After a vfork the answer is in the pipe already;
/// otherwise this waits for the child's own steps up to its execve (files, identity, cgroup), in
/// which no code of the app's runs. No time-out: no caller had one to give.
void icebox_spawn_await_exec(int err_read, int pidfd, int clone_parent, struct icebox_spawn_result *result);

#endif

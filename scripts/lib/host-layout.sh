# The host layouts icebox is tested on, made in the calling process's mount namespace (run
# it in a fresh one: `unshare --mount --propagation private`), as root, from a hybrid host
# (cgroup2 at $2, v1 controllers beside it). The one source of these commands: scripts/test-
# layouts runs the whole suite in each, and HostLayoutTests (HostLayout.setup) runs one
# lifecycle in each through the same function. POSIX sh (the tests source it from /bin/sh).
# Sourced, not run.

# icebox_host_layout LAYOUT UNIFIED: makes LAYOUT, UNIFIED being the host's cgroup2 mount
# point (the hidden one, for v1-only).
icebox_host_layout() {
    case $1 in
    pure-v2 | delegated)
        # As on a systemd host: the whole v1 tree gone, cgroup2 alone in its place. (delegated:
        # the same, its commands then run as an unprivileged user in a subtree it owns.)
        umount -l /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup
        ;;
    v1-only)
        # Hidden under an empty tmpfs: still listed in mountinfo, but not reachable.
        mount -t tmpfs -o mode=755,size=16k icebox-hide "$2"
        ;;
    none)
        mount -t tmpfs -o mode=755,size=16k icebox-hide /sys/fs/cgroup
        ;;
    read-only)
        # Every cgroup mount, and the tmpfs that holds them, read-only.
        for m in $(awk '$5 ~ "^/sys/fs/cgroup(/|$)" { print $5 }' /proc/self/mountinfo); do
            mount -o remount,bind,ro "$m" || return 1
        done
        ;;
    *)
        echo "icebox_host_layout: unknown layout '$1' (pure-v2, v1-only, none, read-only, delegated)" >&2
        return 64
        ;;
    esac
}

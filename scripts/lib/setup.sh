# Shared by scripts/icebox, scripts/test and the benchmarks: install what icebox needs (and,
# for scripts/test, what its tests need) on a fresh Debian machine (as root), and build it.
# Each step that takes a while says so on stderr. Sourced, not run.

ICEBOX_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# Debian packages, each with how to tell it is there (icebox_has). What icebox needs to build
# and run (scripts/icebox and its demo, scripts/install, the benchmarks): libcap-dev, found
# through pkg-config (icebox links libcap), and python3 (the demo's example apps).
ICEBOX_PACKAGES=(
    libcap-dev=file:/usr/include/sys/capability.h
    pkg-config=command:pkg-config
    python3=command:python3
)
# What only the tests need (scripts/test installs these too): systemd's systemd-notify (a
# real sd_notify client), util-linux's setpriv (a command run as an unprivileged user), groff
# (the man page check); for the completion and install tests: bash-completion, zsh and fish
# (the completions run in each), man-db (man finds the installed page); an NSS module of the
# kind LDAP or sssd are, for the tests of --user lookups; python3-prometheus-client (the
# Prometheus client's parsers read `icebox metrics`). Debian's python3-prometheus-client
# serves Debian's /usr/bin/python3, which the tests use when `python3` on PATH is another.
# tmux: `icebox top` is tested on a real terminal (keys sent, the screen read back). gdb:
# breakpoints show which of glibc's start-up functions the release binary runs.
ICEBOX_TEST_PACKAGES=(
    systemd=command:systemd-notify
    util-linux=command:setpriv
    groff=command:groff
    bash-completion=file:/usr/share/bash-completion/bash_completion
    zsh=command:zsh
    fish=command:fish
    man-db=command:man
    libnss-extrausers=library:libnss_extrausers.so
    python3-prometheus-client=python:prometheus_client
    tmux=command:tmux
    strace=command:strace
    gdb=command:gdb
)

# icebox_has KIND:WHAT: whether what a package provides is there.
icebox_has() {
    local what=${1#*:}
    case ${1%%:*} in
    command) command -v "$what" >/dev/null ;;
    file) [ -f "$what" ] ;;
    library) compgen -G "/usr/lib/$what.*" >/dev/null || compgen -G "/usr/lib/*/$what.*" >/dev/null ;;
    python) python3 -c "import $what" 2>/dev/null || /usr/bin/python3 -c "import $what" 2>/dev/null ;;
    *) return 1 ;;
    esac
}

# icebox_wants_help "$@": whether -h or --help is among a script's arguments.
icebox_wants_help() {
    local arg
    for arg in "$@"; do
        case $arg in -h | --help) return 0 ;; esac
    done
    return 1
}

# icebox_usage: the calling script's header comment (the lines after #!), its usage.
icebox_usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }

# icebox_help_if_asked "$@": the usage, and exit 0, when the script is asked for -h or --help,
# before it installs, builds or measures anything.
icebox_help_if_asked() {
    icebox_wants_help "$@" || return 0
    icebox_usage
    exit 0
}

# icebox_install_dependencies [--tests]: installs the packages icebox needs that are missing
# (with --tests, the tests' too), saying on stderr what it installs and why, and how long
# that took: on a fresh machine apt takes a minute or more, which would otherwise pass in
# silence.
icebox_install_dependencies() {
    local entries=("${ICEBOX_PACKAGES[@]}") why="to build and run icebox" entry missing=() started=$SECONDS
    if [ "${1:-}" = --tests ]; then
        entries+=("${ICEBOX_TEST_PACKAGES[@]}")
        why="to build, run and test icebox"
    fi
    for entry in "${entries[@]}"; do
        icebox_has "${entry#*=}" || missing+=("${entry%%=*}")
    done
    [ ${#missing[@]} -gt 0 ] || return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "icebox: missing Debian packages: ${missing[*]} (run as root, or apt-get install them)" >&2
        return 69
    fi
    export DEBIAN_FRONTEND=noninteractive
    echo "icebox: installing Debian packages $why: ${missing[*]}" >&2
    echo "icebox: apt-get update (the package lists)..." >&2
    apt-get update -qq >&2
    echo "icebox: apt-get install ${missing[*]}..." >&2
    apt-get install -y -qq "${missing[@]}" >&2
    echo "icebox: installed ${missing[*]} in $((SECONDS - started)) s" >&2
}

# The release binary, built if stale (swift build is incremental: a no-op when up to date).
# A fully static executable (-static-executable: the Swift runtime, FoundationEssentials,
# glibc and libcap all linked in): no dynamic loader, no relocations, so `icebox suspend`
# typed in a shell starts about as fast as /bin/true (1.5x its CPU time here, against 2.5x
# with only the Swift runtime static). The linker warns that the static archives call
# getpwnam_r, dlopen and mktemp: name-service lookups from a static glibc load the same
# glibc's NSS modules at run time, which is the glibc this binary is built on (icebox is
# built where it runs); those lines are filtered out with the progress lines.
icebox_build_release() {
    # ICEBOX_BIN set to an existing binary skips the build (for benchmarking a given build).
    if [ -n "${ICEBOX_BIN:-}" ] && [ -x "$ICEBOX_BIN" ]; then return 0; fi
    # A failed build fails here, even if an older binary is still there.
    local status=0 log
    log=$(mktemp)
    # Concrete types' metadata by accessor calls, not mangled names: a mangled name is
    # demangled at its first use and its generic requirements checked by scanning every
    # conformance record of the (static) binary; it cost a one-shot `icebox suspend` ~350 µs
    # of its ~2.3 ms (benchmarks/RESULTS.md, start-up).
    local flags=(-c release --static-swift-stdlib -Xswiftc -static-executable
        -Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors)
    # The functions a one-shot command runs, and then the data it touches, laid out together
    # (scripts/link-order made the list): each function in a section of its own, and lld (the
    # toolchain's) ordering them and the data sections of the libraries that have one per
    # variable. `icebox --version` took 95 page faults, 70 so; `icebox suspend` 1.62x the C
    # one-shot, 1.53x so; with the data gathered too, 58 faults against 75 and 1.41 against
    # 1.50 ms (benchmarks/RESULTS.md). Without lld in the toolchain, the default linker.
    local order="$ICEBOX_ROOT/scripts/lib/link-order.txt" lld
    lld=$(dirname "$(readlink -f "$(command -v swiftc)")")/ld.lld
    if [ -x "$lld" ] && [ -f "$order" ]; then
        flags+=(-Xswiftc -use-ld=lld -Xswiftc -Xfrontend -Xswiftc -function-sections
            -Xlinker "--symbol-ordering-file=$order" -Xlinker --no-warn-symbol-ordering)
        # Each segment starts on a 2 MiB boundary, in the file as in memory, so the kernel
        # can map 2 MiB of the program's code or read-only data with one page-table entry
        # when the page cache holds that stretch of the file in one 2 MiB folio (as it does
        # after icebox_write_whole wrote the file). Both layouts written that way:
        # `icebox --version` took 46 page faults and 0.66 ms against 75 and 0.73 ms (the hot
        # functions sit in the first 2 MiB of code), a suspend 1.45 against 1.54 ms. From a
        # page cache that readahead filled (after a reboot) both start alike, 0.98 ms. The
        # file grows by the padding, about 5 MiB.
        flags+=(-Xlinker -z -Xlinker max-page-size=0x200000 -Xlinker -z -Xlinker separate-loadable-segments)
        # The first instruction is CIceboxStart's icebox_entry (image_folios.c): it asks for that
        # code in 2 MiB folios before any of it runs, so that a command that reads it back into
        # an emptied page cache (after a reboot, or pressure) leaves it in such folios too.
        case $(uname -m) in
        x86_64 | aarch64) flags+=(-Xlinker -e -Xlinker icebox_entry) ;;
        esac
    fi
    # glibc's start-up without its survey of the CPU (CIceboxStart's libc_start.c): ~80 CPUID
    # instructions, each a trap to the hypervisor in a virtual machine. In one run here,
    # `icebox --version` took 323 µs against 1.20 ms, `icebox suspend` 762 µs against 1.64 ms
    # (benchmarks/budget.md, "glibc's start-up"). Only for the glibc whose start-up it
    # repeats (2.36, x86_64); elsewhere glibc's own.
    if [ "$(uname -m)" = x86_64 ] && [ "$(getconf GNU_LIBC_VERSION 2>/dev/null)" = "glibc 2.36" ]; then
        flags+=(-Xlinker --wrap=__libc_start_main -Xcc -DICEBOX_OWN_LIBC_START)
    fi
    # SwiftPM does not rebuild what is up to date when only these flags (or the order) change:
    # a stamp of them, and a clean release build when it differs (or a binary is there
    # without one).
    local stamp="$ICEBOX_ROOT/.build/release-flags" stale=0 stamped="${flags[*]}"
    [ -f "$order" ] && stamped+=" order $(cksum <"$order")"
    if [ -f "$stamp" ]; then
        [ "$(cat "$stamp")" = "$stamped" ] || stale=1
    elif [ -e "$ICEBOX_ROOT/.build/release/icebox" ]; then
        stale=1
    fi
    if [ "$stale" -eq 1 ]; then
        rm -rf "$ICEBOX_ROOT/.build/release" "$ICEBOX_ROOT"/.build/*-linux-gnu/release
    fi
    # Said on stderr when the build will take a while (swift build itself is kept quiet): the
    # first one, optimised and linked statically, takes about 2 minutes on 2 cores; one after
    # a change to the sources, up to a minute. An up-to-date build says nothing (it takes a
    # second), so `scripts/icebox ps` prints only what icebox prints. Changed sources: newer
    # than the stamp, which each successful build writes.
    local bin="$ICEBOX_ROOT/.build/release/icebox" announced="" started=$SECONDS
    if [ ! -e "$bin" ]; then
        announced="building the release binary .build/release/icebox (swift build -c release, static): about 2 minutes the first time on 2 cores"
    elif [ -n "$(find "$ICEBOX_ROOT/Sources" "$ICEBOX_ROOT/Package.swift" -newer "$stamp" -print -quit 2>/dev/null)" ]; then
        announced="rebuilding the release binary .build/release/icebox: the sources changed since it was built (up to a minute)"
    fi
    [ -z "$announced" ] || echo "icebox: $announced..." >&2
    (cd "$ICEBOX_ROOT" && swift build "${flags[@]}" --product icebox) >"$log" 2>&1 || status=$?
    [ -z "$announced" ] || [ "$status" -ne 0 ] || echo "icebox: built .build/release/icebox in $((SECONDS - started)) s" >&2
    [ "$status" -ne 0 ] || { mkdir -p "$ICEBOX_ROOT/.build" && echo "$stamped" >"$stamp"; }
    grep -vE '^(Building|Build (of product .icebox. )?complete|\[[0-9]+/[0-9]+\])|the use of .mktemp. is dangerous|in statically linked applications requires at runtime' \
        "$log" >&2 || true
    rm -f "$log"
    ICEBOX_BIN="$ICEBOX_ROOT/.build/release/icebox"
    if [ "$status" -ne 0 ] || [ ! -x "$ICEBOX_BIN" ]; then
        echo "icebox: the release build failed (see above)" >&2
        return 1
    fi
    # Put a copy in the linker's output's place, as scripts/install does, once per link: the
    # linker wrote the file through mmap, a page at a time, and a process maps the page cache
    # as it finds it (see icebox_write_whole). Same mode and times, so SwiftPM sees its own
    # output. The marker keeps the copy to one per link.
    local marker="$ICEBOX_ROOT/.build/release/.icebox-installed"
    if [ ! -e "$marker" ] || [ "$ICEBOX_BIN" -nt "$marker" ]; then
        icebox_write_whole "$ICEBOX_BIN" "$ICEBOX_BIN.copy" && touch -r "$ICEBOX_BIN" "$ICEBOX_BIN.copy" &&
            mv -f "$ICEBOX_BIN.copy" "$ICEBOX_BIN" && touch "$marker"
    fi
}

# Copies the file SRC to DST, with SRC's mode, in a single write() of all of it (dd with one
# block larger than the file). The page cache then holds the new file in the largest folios the
# filesystem makes (2 MiB on ext4 here), and every process that maps a 2 MiB-aligned stretch
# of it gets one page-table entry for it instead of 512: fewer page faults at each start and
# fewer TLB misses after. The file as the linker left it (written through mmap, a page at a
# time) started `icebox --version` in 0.96 ms, a copy made by cp or install (in 64 KiB
# pieces) in 0.76-0.80 ms, one written this way in 0.66 ms (benchmarks/RESULTS.md, session 23).
icebox_write_whole() {
    local size
    size=$(stat -c %s "$1") || return 1
    dd if="$1" of="$2" bs=$((size + 4096)) count=1 iflag=fullblock status=none && chmod --reference="$1" "$2"
}

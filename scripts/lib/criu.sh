# Getting a CRIU that works here (scripts/criu, scripts/test): the check, the mirror, the
# download, the build. Sourced, not run. The facts behind it (which versions work on this
# kernel, what Debian serves, the build dependencies) are in docs/criu.md.

# Where the built criu goes: icebox's own place for programs it runs (the library looks here
# after ICEBOX_CRIU and before PATH: CriuProbe.swift). Never /usr/sbin/criu, which is
# Debian's package's. Beside it, criu.source says what it was built from.
ICEBOX_CRIU_INSTALLED=/usr/local/libexec/icebox/criu

# The oldest CRIU that runs on x86 kernels >= 6.13 (whose vDSO data is split into [vvar]
# and [vvar_vclock]); 4.1.1, 4.2 and 4.2.1 were tested here.
ICEBOX_CRIU_MINIMUM=4.1
# The oldest CRIU that dumps a process holding an AF_INET/AF_INET6 socket on kernels >= 6.16,
# which allow SO_PASSCRED, SO_PASSPIDFD and SO_PASSSEC only on unix, netlink and bluetooth
# sockets (kernel commit 7d8d93fdde50b): criu 4.1.1 reads them from every socket and fails
# with "sockets: Can't get 1:16 opt: Operation not supported" (checkpoint-restore/criu
# #2705, #2718; fixed by #2719 in 4.2).
ICEBOX_CRIU_MINIMUM_PASSCRED=4.2

# Debian 12's packages that build it (criu-facts.md, measured: 13 s to install).
ICEBOX_CRIU_BUILD_PACKAGES=(
    build-essential pkg-config libcap-dev uuid-dev libgnutls28-dev python3-protobuf
    libprotobuf-dev libprotobuf-c-dev protobuf-c-compiler protobuf-compiler libnl-3-dev
    libnet1-dev libbsd-dev libnftables-dev
)

# The Debian release whose source package is built: sid (unstable), the only one with criu
# >= 4.2 (trixie has 4.1.1, which cannot dump a TCP socket on kernels >= 6.16). sid moves: the
# build refuses a version older than icebox_criu_minimum, and the built binary must pass
# icebox_criu_works before it replaces the installed one. ICEBOX_CRIU_SUITE=trixie still
# works on kernels older than 6.16.
ICEBOX_CRIU_SUITE=${ICEBOX_CRIU_SUITE:-sid}

# Build dependencies in the source record that `make criu` does not use (packaging, man
# pages, the Python bindings and crit); any other one not in ICEBOX_CRIU_BUILD_PACKAGES is
# installed too when this release has it (icebox_criu_extra_build_packages).
ICEBOX_CRIU_UNNEEDED_BUILD_DEPENDS=(
    asciidoc debhelper-compat dh-python pybuild-plugin-pyproject python3-all python3-setuptools
    python3-googleapis-common-protos xmlto pkgconf
)

# icebox_kernel_restricts_passcred: whether this kernel refuses SO_PASSCRED on an AF_INET
# socket (getsockopt fails with EOPNOTSUPP: Linux >= 6.16). Asked of the kernel itself, not
# inferred from its version (a distribution may backport the change); only without python3
# does the release decide.
icebox_kernel_restricts_passcred() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -c '
import errno, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
try:
    s.getsockopt(socket.SOL_SOCKET, getattr(socket, "SO_PASSCRED", 16))
except OSError as e:
    sys.exit(0 if e.errno == errno.EOPNOTSUPP else 1)
sys.exit(1)'
        return
    fi
    icebox_version_at_least "$(uname -r | sed 's/^\([0-9][0-9.]*\).*/\1/')" 6.16
}

# icebox_criu_minimum: the oldest criu that works on this kernel: 4.2 where it restricts
# SO_PASSCRED, else 4.1.
icebox_criu_minimum() {
    if icebox_kernel_restricts_passcred; then
        echo "$ICEBOX_CRIU_MINIMUM_PASSCRED"
    else
        echo "$ICEBOX_CRIU_MINIMUM"
    fi
}

# icebox_criu_why_minimum: why icebox_criu_minimum says what it says, for messages.
icebox_criu_why_minimum() {
    if icebox_kernel_restricts_passcred; then
        echo "this kernel allows SO_PASSCRED only on unix sockets (Linux >= 6.16), and older criu cannot dump a TCP or UDP socket here"
    else
        echo "x86 kernels >= 6.13 split the vDSO data, and older criu fails every command there"
    fi
}

# icebox_criu_version BINARY: "4.1.1" from `criu --version` ("Version: 4.1.1"), or nothing.
icebox_criu_version() {
    timeout 10 "$1" --version 2>/dev/null | sed -n 's/^Version: *\([0-9][0-9.]*\).*/\1/p' | head -n 1
}

# icebox_version_at_least HAVE WANT: whether the dotted version HAVE >= WANT.
icebox_version_at_least() {
    [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]
}

# icebox_criu_works BINARY: whether BINARY is a criu >= icebox_criu_minimum whose `criu
# check` exits 0 and which dumps a process holding a TCP listening socket
# (icebox_criu_dumps_tcp; the library's probe adds a restore: `icebox doctor`). Says why not
# on stderr when BINARY exists.
icebox_criu_works() {
    local binary=$1 version minimum
    [ -x "$binary" ] || return 1
    version=$(icebox_criu_version "$binary")
    if [ -z "$version" ]; then
        echo "icebox: $binary --version prints no version: not used" >&2
        return 1
    fi
    minimum=$(icebox_criu_minimum)
    if ! icebox_version_at_least "$version" "$minimum"; then
        echo "icebox: $binary is criu $version; icebox needs >= $minimum on this kernel ($(icebox_criu_why_minimum)): not used" >&2
        return 1
    fi
    # criu check needs root; as another user it says so and fails: reported, not fatal.
    if ! timeout 30 "$binary" check >/dev/null 2>&1; then
        echo "icebox: '$binary check' fails (criu $version): not used" >&2
        return 1
    fi
    icebox_criu_dumps_tcp "$binary" "$version"
}

# icebox_criu_dumps_tcp BINARY VERSION: whether BINARY dumps (--leave-running) a throwaway
# python3 holding a TCP listening socket on 127.0.0.1, in a session of its own: what every
# server evicted to disk needs, and what criu 4.1.1 cannot do on kernels >= 6.16 although its
# `criu check` passes. ~0.2 s. Without python3 there is no canary: the version rule stands
# alone (said on stderr).
icebox_criu_dumps_tcp() {
    local binary=$1 version=$2 dir fd pid line ok=0
    if ! command -v python3 >/dev/null 2>&1; then
        echo "icebox: no python3 for the TCP canary dump: $binary is checked by its version alone" >&2
        return 0
    fi
    dir=$(mktemp -d "${TMPDIR:-/tmp}/icebox-criu-tcp.XXXXXX") || return 1
    # The canary says "ready" once it listens, then lets go of the pipe (criu would dump it)
    # and sleeps; it is this shell's child (the process substitution execs it).
    exec {fd}< <(exec python3 -c '
import os, socket, time
os.setsid()
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.bind(("127.0.0.1", 0))
s.listen()
print("ready", flush=True)
os.dup2(os.open(os.devnull, os.O_RDWR), 1)
time.sleep(3600)' </dev/null 2>/dev/null)
    pid=$!
    if IFS= read -r -t 10 line <&"$fd" && [ "$line" = ready ] &&
        timeout 30 "$binary" dump --tree "$pid" --images-dir "$dir" --leave-running --log-file dump.log >/dev/null 2>&1; then
        ok=1
    fi
    kill -KILL "$pid" 2>/dev/null || true
    exec {fd}<&-
    wait "$pid" 2>/dev/null || true
    if [ "$ok" -eq 0 ]; then
        # The first error but the RLIMIT_NOFILE one every 4.x run logs.
        line=$(grep 'Error (' "$dir/dump.log" 2>/dev/null | grep -v -m 1 RLIMIT_NOFILE || true)
        echo "icebox: $binary (criu $version) cannot dump a process holding a TCP listening socket${line:+: ${line#*Error }}: not used" >&2
    fi
    rm -rf "$dir"
    [ "$ok" -eq 1 ]
}

# icebox_criu_extra_build_packages RECORD: the build dependencies in the source record
# RECORD (apt-cache showsrc) that are neither in ICEBOX_CRIU_BUILD_PACKAGES nor known to be
# unneeded by `make criu`, one a line: a newer criu may need a library the list does not
# name yet.
icebox_criu_extra_build_packages() {
    local known=" ${ICEBOX_CRIU_BUILD_PACKAGES[*]} ${ICEBOX_CRIU_UNNEEDED_BUILD_DEPENDS[*]} " package
    # The field may go on over indented continuation lines.
    printf '%s\n' "$1" | awk '/^Build-Depends:/ { on = 1; sub(/^Build-Depends:/, ""); print; next }
        on && /^[ \t]/ { print; next } { on = 0 }' | tr '\n' ',' | tr ',' '\n' |
        sed 's/|.*//; s/[[(<].*//; s/:any//; s/^ *//; s/ *$//' | while read -r package; do
        [ -n "$package" ] && [[ $known != *" $package "* ]] && echo "$package"
    done
    return 0
}

# icebox_debian_mirror: "URI KEYRING" of this machine's own Debian archive (the first `deb`
# entry for its release, e.g. bookworm, not bookworm-security), from /etc/apt/sources.list,
# sources.list.d/*.list (one-line) and sources.list.d/*.sources (deb822). KEYRING is the
# entry's Signed-By file, or "-" for apt's trusted keys.
icebox_debian_mirror() {
    local codename
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    [ -n "$codename" ] || return 1
    local files=() f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do [ -f "$f" ] && files+=("$f"); done
    if [ ${#files[@]} -gt 0 ]; then
        awk -v codename="$codename" '
            $1 == "deb" {
                keyring = "-"; i = 2
                if ($2 ~ /^\[/) {
                    while (i <= NF) {
                        if ($i ~ /^\[?signed-by=/) { k = $i; sub(/^\[?signed-by=/, "", k); sub(/\]$/, "", k); keyring = k }
                        if ($i ~ /\]$/) { i++; break }
                        i++
                    }
                }
                if ($(i + 1) == codename) { print $i, keyring; exit }
            }' "${files[@]}" | head -n 1 | grep . && return 0
    fi
    files=()
    for f in /etc/apt/sources.list.d/*.sources; do [ -f "$f" ] && files+=("$f"); done
    [ ${#files[@]} -gt 0 ] || return 1
    # deb822: stanzas separated by blank lines, "Field: value", comments start with '#'.
    awk -v codename="$codename" '
        function flush() {
            if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " codename " ") && enabled != "no" && uri != "")
                { print uri, (keyring == "" ? "-" : keyring); found = 1; exit }
            types = suites = uri = keyring = enabled = ""
        }
        /^#/ { next }
        /^[ \t]*$/ { flush(); next }
        {
            field = tolower($1); value = $0; sub(/^[^:]*:[ \t]*/, "", value)
            if (field == "types:") types = value
            else if (field == "suites:") suites = value
            else if (field == "uris:") { split(value, u, /[ \t]+/); uri = u[1] }
            else if (field == "signed-by:") keyring = value
            else if (field == "enabled:") enabled = tolower(value)
        }
        END { if (!found) flush() }' "${files[@]}" | head -n 1 | grep .
}

# icebox_criu_build: downloads, checks, builds and installs criu as ICEBOX_CRIU_INSTALLED;
# exits the script with the status scripts/criu documents when it cannot.
icebox_criu_build() {
    local started=$SECONDS
    if [ "$(id -u)" -ne 0 ]; then
        echo "icebox: building criu needs root (apt-get install of its build dependencies); run scripts/criu as root" >&2
        exit 77
    fi
    local mirror keyring
    if ! read -r mirror keyring < <(icebox_debian_mirror); then
        echo "icebox: cannot build criu: no Debian 'deb' line for this release in /etc/apt/sources.list*: no mirror to fetch its source from" >&2
        exit 69
    fi
    local work
    work=$(mktemp -d /var/tmp/icebox-criu.XXXXXX)
    # shellcheck disable=SC2064 # expanded now: the directory of this run
    trap "rm -rf '$work'" EXIT
    # A private apt: its own sources list (trixie's sources only), lists and cache, so the
    # machine's own configuration, lists and candidates are left as they were. apt downloads
    # as _apt: the directories it writes into are _apt's.
    mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/parts" "$work/source"
    chmod 755 "$work"
    chown -R _apt "$work/lists" "$work/cache" "$work/source" 2>/dev/null || true
    local signed=""
    [ "$keyring" = - ] || signed=" [signed-by=$keyring]"
    echo "deb-src$signed $mirror $ICEBOX_CRIU_SUITE main" >"$work/sources.list"
    cat >"$work/apt.conf" <<EOF
Dir::Etc::SourceList "$work/sources.list";
Dir::Etc::SourceParts "$work/parts";
Dir::State::Lists "$work/lists";
Dir::Cache "$work/cache";
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
Acquire::Languages "none";
Acquire::Retries "2";
EOF
    export APT_CONFIG="$work/apt.conf"
    echo "icebox: fetching the index of Debian $ICEBOX_CRIU_SUITE's sources from $mirror (apt-get update, private configuration)..." >&2
    # apt-get update exits 0 even when a fetch failed (a warning): the index must be there.
    if ! apt-get update -qq -o Acquire::http::Timeout=30 >"$work/update.log" 2>&1 ||
        ! compgen -G "$work/lists/*_dists_${ICEBOX_CRIU_SUITE}_main_source_Sources*" >/dev/null; then
        sed 's/^/    /' "$work/update.log" >&2
        echo "icebox: cannot build criu: apt could not fetch (or verify) Debian $ICEBOX_CRIU_SUITE's source index from $mirror (network? see above)" >&2
        exit 69
    fi
    # The source package's record, from the index apt verified (InRelease's signature, then
    # the index's hash): the version, and the upstream tarball's name and sha256.
    local record version orig sha
    record=$(apt-cache showsrc --only-source criu 2>/dev/null | awk 'BEGIN { RS = "" } /(^|\n)Package: criu\n/ { print; exit }')
    version=$(printf '%s\n' "$record" | sed -n 's/^Version: //p')
    read -r sha orig < <(printf '%s\n' "$record" | awk '/^Checksums-Sha256:/ { on = 1; next } /^[^ ]/ { on = 0 } on && $3 ~ /\.orig\.tar\.(xz|gz|bz2)$/ { print $1, $3; exit }') || true
    local upstream=${version#*:}
    upstream=${upstream%%-*}
    upstream=${upstream%%+*}
    if [ -z "$version" ] || [ -z "$orig" ] || [ -z "$sha" ]; then
        echo "icebox: cannot build criu: Debian $ICEBOX_CRIU_SUITE's source index has no criu record with an upstream tarball" >&2
        exit 69
    fi
    local minimum
    minimum=$(icebox_criu_minimum)
    if ! icebox_version_at_least "$upstream" "$minimum"; then
        echo "icebox: cannot build criu: Debian $ICEBOX_CRIU_SUITE has criu $version, older than $minimum, which this kernel needs ($(icebox_criu_why_minimum)); ICEBOX_CRIU_SUITE names another release" >&2
        exit 69
    fi
    # apt-get source fetches the .dsc, the .orig and the .debian tarballs; this mirror serves
    # the .orig but not the other two (404), so apt-get exits 100 having fetched what it
    # could: only the .orig tarball is used, and only after its hash is checked here.
    echo "icebox: downloading criu $version's upstream source ($orig, apt-get source --download-only)..." >&2
    (cd "$work/source" && apt-get source --download-only -qq "criu=$version" >"$work/source.log" 2>&1) || true
    if [ ! -f "$work/source/$orig" ]; then
        sed 's/^/    /' "$work/source.log" >&2
        echo "icebox: cannot build criu: $orig could not be downloaded from $mirror (see above)" >&2
        exit 69
    fi
    local got
    got=$(sha256sum "$work/source/$orig" | cut -d' ' -f1)
    if [ "$got" != "$sha" ]; then
        echo "icebox: cannot build criu: $orig has sha256 $got, but Debian $ICEBOX_CRIU_SUITE's signed index says $sha: not used" >&2
        exit 65
    fi
    unset APT_CONFIG
    echo "icebox: $orig: sha256 $sha matches Debian $ICEBOX_CRIU_SUITE's index" >&2

    # The list this script knows, plus what the record names beyond it (and beyond what
    # `make criu` does not use) when this release has such a package: said, so that a build
    # that fails for want of one says which.
    local wanted=("${ICEBOX_CRIU_BUILD_PACKAGES[@]}") package
    while read -r package; do
        [ -n "$package" ] || continue
        if [ -n "$(apt-cache policy "$package" 2>/dev/null | sed -n 's/^ *Candidate: //p' | grep -v '(none)')" ]; then
            echo "icebox: criu $version's source record also names $package as a build dependency: installing it" >&2
            wanted+=("$package")
        else
            echo "icebox: criu $version's source record names $package as a build dependency, which this release does not have: building without it" >&2
        fi
    done < <(icebox_criu_extra_build_packages "$record")
    local missing=()
    for package in "${wanted[@]}"; do
        [ "$(dpkg-query -W -f '${db:Status-Status}' "$package" 2>/dev/null)" = installed ] || missing+=("$package")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "icebox: installing criu's build dependencies: ${missing[*]}..." >&2
        export DEBIAN_FRONTEND=noninteractive
        if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >"$work/install.log" 2>&1; then
            # Perhaps stale package lists: once more after an update.
            apt-get update -qq >&2 || true
            if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >"$work/install.log" 2>&1; then
                sed 's/^/    /' "$work/install.log" >&2
                echo "icebox: cannot build criu: its build dependencies could not be installed (see above)" >&2
                exit 69
            fi
        fi
    fi

    echo "icebox: building criu $upstream (make -j2 criu: about a minute on 2 cores)..." >&2
    local build_started=$SECONDS
    mkdir "$work/build"
    tar -xf "$work/source/$orig" -C "$work/build" --strip-components=1
    local jobs
    jobs=$(nproc 2>/dev/null || echo 2)
    [ "$jobs" -le 4 ] || jobs=4
    if ! make -C "$work/build" -j"$jobs" criu >"$work/build.log" 2>&1 || [ ! -x "$work/build/criu/criu" ]; then
        tail -n 30 "$work/build.log" | sed 's/^/    /' >&2
        echo "icebox: the build of criu $upstream failed (the last lines of its log above)" >&2
        exit 70
    fi
    echo "icebox: built criu $upstream in $((SECONDS - build_started)) s" >&2

    # Checked where it was built, before it replaces anything: a criu that fails the check
    # (sid moves) leaves the installed one as it was.
    if ! icebox_criu_works "$work/build/criu/criu"; then
        echo "icebox: the criu $upstream just built fails its check (above): $ICEBOX_CRIU_INSTALLED left as it was" >&2
        exit 70
    fi
    # Copied beside (same file system), then renamed over: a criu that runs meanwhile keeps
    # its file, and a criu started meanwhile gets the old or the new one, whole.
    local dir
    dir=$(dirname "$ICEBOX_CRIU_INSTALLED")
    mkdir -p "$dir"
    install -m 755 "$work/build/criu/criu" "$ICEBOX_CRIU_INSTALLED.new"
    printf 'criu %s, built by icebox scripts/criu from Debian %s source package criu %s\n%s  %s\nmirror %s\nlicence GPL-2.0 (CRIU); icebox runs this program, it does not ship it\n' \
        "$upstream" "$ICEBOX_CRIU_SUITE" "$version" "$sha" "$orig" "$mirror" >"$dir/criu.source.new"
    mv -f "$ICEBOX_CRIU_INSTALLED.new" "$ICEBOX_CRIU_INSTALLED"
    mv -f "$dir/criu.source.new" "$dir/criu.source"
    echo "icebox: installed criu $upstream as $ICEBOX_CRIU_INSTALLED in $((SECONDS - started)) s" >&2
}

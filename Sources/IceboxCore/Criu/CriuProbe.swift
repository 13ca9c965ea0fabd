import Glibc
import IceboxSystem

/// Whether evicting to disk can work here: finds `criu` (``CriuBinary``), checks its version
/// against what the kernel needs (`minimumForSplitVvar`, `minimumForPassCredRestriction`), runs
/// `criu check` (not `--all`: it fails here for autofs and soft-dirty, which icebox does not use),
/// then dumps and restores a canary (``CriuCanary``). The verdict is cached per kernel release and
/// binary (``CriuProbeCache``). Every criu run has a deadline and is reaped.
package enum CriuProbe {
    static let versionTimeoutNanos: UInt64 = 10_000_000_000
    static let checkTimeoutNanos: UInt64 = 30_000_000_000
    /// The version the vDSO fix came in (CRIU 4.1: x86 kernels from 6.13 split the vDSO data
    /// into `[vvar]` and `[vvar_vclock]`, and 3.x fails with "Unexpected rt vDSO area bounds").
    package static let minimumForSplitVvar = [4, 1]
    /// The version the SO_PASSCRED fix came in (CRIU 4.2, checkpoint-restore/criu #2719): Linux
    /// 6.16 (commit 7d8d93fdde50b) allows SO_PASSCRED, SO_PASSPIDFD and SO_PASSSEC only on unix,
    /// netlink and bluetooth sockets, and criu 4.1.x reads them from every socket it dumps, failing
    /// with "sockets: Can't get 1:16 opt: Operation not supported" on any process holding an
    /// AF_INET or AF_INET6 socket (every server).
    package static let minimumForPassCredRestriction = [4, 2]

    /// Probes (or reads the cached verdict) for the criu this environment selects. `stateDir`:
    /// where the verdict is cached (nil: not cached); `useCache` false probes anew (and caches the
    /// new verdict).
    package static func run(
        environment: [String: String], stateDir: String?, useCache: Bool = true, installedPath: String = CriuBinary.installed
    ) -> CriuVerdict {
        let kernel = kernelRelease()
        guard let binary = CriuBinary.find(environment: environment, installedPath: installedPath) else {
            return CriuVerdict(
                outcome: .notFound, path: nil, source: nil, version: nil,
                reason: "no criu: none in ICEBOX_CRIU, \(CriuBinary.installed) or PATH (scripts/criu builds one)",
                kernel: kernel)
        }
        guard let identity = cacheIdentity(binary) else {
            return CriuVerdict(
                outcome: .notFound, path: binary.path, source: binary.source, version: nil,
                reason: "\(binary.path) is not a file", kernel: kernel)
        }
        if useCache, let stateDir,
            let cached = CriuProbeCache.load(stateDir: stateDir, kernel: kernel, binary: binary.path, identity: identity)
        {
            return cached
        }
        var verdict = probe(binary, kernel: kernel)
        if let stateDir {
            do { try CriuProbeCache.store(verdict, stateDir: stateDir, binary: binary.path, identity: identity) } catch {
                verdict.cacheProblem = error.message
            }
        }
        return verdict
    }

    /// What a cached verdict must match besides the kernel: the binary (`CriuBinary.identity`; nil
    /// if not a file) and this process's effective and bounding capabilities, which criu inherits
    /// (a daemon that dropped CAP_SYS_ADMIN does not get doctor's verdict as root).
    package static func cacheIdentity(_ binary: CriuBinary) -> String? {
        guard let file = binary.identity() else { return nil }
        // Unreadable (no /proc): the capabilities read "?", an identity no cached verdict matches,
        // so criu is probed again.
        let status = (try? FileIO.read("/proc/self/status")) ?? ""
        let effective = ProcFS.statusField("CapEff", in: status) ?? "?"
        let bounding = ProcFS.statusField("CapBnd", in: status) ?? "?"
        return file + " caps " + effective + "/" + bounding
    }

    /// The probe itself, uncached.
    static func probe(_ binary: CriuBinary, kernel: String) -> CriuVerdict {
        var verdict = CriuVerdict(
            outcome: .checkFailed, path: binary.path, source: binary.source, version: nil, reason: nil, kernel: kernel)
        let versionRun: CriuCommand
        do { versionRun = try CriuCommand.run(binary.path, ["--version"], timeoutNanos: versionTimeoutNanos) } catch {
            verdict.reason = "cannot run it: \(error)"
            return verdict
        }
        guard versionRun.succeeded, let version = version(in: versionRun.output) else {
            verdict.outcome = .tooOld
            verdict.reason = "`criu --version` printed no version (it \(versionRun.ending(timeoutNanos: versionTimeoutNanos)))"
            return verdict
        }
        verdict.version = version
        // The higher minimum first: a 3.x on a kernel with both changes is told to get 4.2.
        if kernelRestrictsPassCred(), !atLeast(version, minimumForPassCredRestriction) {
            verdict.outcome = .tooOld
            verdict.reason =
                "criu \(version) is older than 4.2, which this kernel needs: it allows SO_PASSCRED only on unix, "
                + "netlink and bluetooth sockets (Linux 6.16; getsockopt on a TCP socket fails with EOPNOTSUPP), "
                + "and criu before 4.2 then cannot dump any process holding a TCP or UDP socket "
                + "(\"Can't get 1:16 opt\"): run scripts/criu, or set ICEBOX_CRIU to a criu >= 4.2"
            return verdict
        }
        if kernelSplitsVvar(), !atLeast(version, minimumForSplitVvar) {
            verdict.outcome = .tooOld
            verdict.reason =
                "criu \(version) is older than 4.1, which this kernel needs ([vvar_vclock] in /proc/self/maps): "
                + "run scripts/criu, or set ICEBOX_CRIU to a criu >= 4.1"
            return verdict
        }
        let check: CriuCommand
        do { check = try CriuCommand.run(binary.path, ["check"], timeoutNanos: checkTimeoutNanos) } catch {
            verdict.reason = "cannot run criu check: \(error)"
            return verdict
        }
        verdict.checkNanos = check.nanos
        guard check.succeeded else {
            let ending = check.ending(timeoutNanos: checkTimeoutNanos)
            verdict.reason =
                "criu check: " + (CriuCommand.firstError(in: check.output) ?? lastLine(check.output).map { "\($0) (\(ending))" } ?? ending)
            return verdict
        }
        switch CriuCanary.run(criu: binary.path) {
        case .success(let timing):
            verdict.outcome = .works
            verdict.dumpNanos = timing.dumpNanos
            verdict.restoreNanos = timing.restoreNanos
        case .failure(let failure):
            verdict.outcome = .canaryFailed
            verdict.reason = "canary " + failure.reason
        }
        return verdict
    }

    /// "4.1.1" from `criu --version` ("Version: 4.1.1", then perhaps a GitID line).
    package static func version(in output: String) -> String? {
        for line in output.split(separator: "\n") where line.hasPrefix("Version:") {
            let text = String(line.dropFirst("Version:".count)).trimmed()
            let version = text.prefix { $0.isNumber || $0 == "." }
            if !version.isEmpty, version.first!.isNumber { return String(version) }
        }
        return nil
    }

    /// Whether dotted `version` >= `minimum` ("4.1.1" against [4, 1]).
    package static func atLeast(_ version: String, _ minimum: [Int]) -> Bool {
        let parts = version.split(separator: ".").map { Int($0) ?? 0 }
        for (index, wanted) in minimum.enumerated() {
            let have = index < parts.count ? parts[index] : 0
            if have != wanted { return have > wanted }
        }
        return true
    }

    /// Whether this kernel splits the vDSO data ([vvar_vclock] in this process's maps).
    package static func kernelSplitsVvar(maps: String = "/proc/self/maps") -> Bool {
        // Unreadable maps: taken as a kernel without the split, the older layout.
        ((try? FileIO.read(maps)) ?? "").contains("[vvar_vclock]")
    }

    /// Whether this kernel refuses SO_PASSCRED on an AF_INET socket (Linux >= 6.16, or a kernel
    /// with that change backported): asked of the kernel through a real getsockopt on a fresh TCP
    /// socket, not inferred from its release. False when no AF_INET socket can be made (then
    /// nothing icebox dumps holds one either).
    package static func kernelRestrictsPassCred() -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, SOL_SOCKET, SO_PASSCRED, &value, &length) < 0 && errno == EOPNOTSUPP
    }

    /// uname -r.
    package static func kernelRelease() -> String {
        // A cache entry's label only: "unknown" matches no release, so nothing stale is used.
        ((try? FileIO.read("/proc/sys/kernel/osrelease")) ?? "unknown").trimmed()
    }

    static func lastLine(_ text: String) -> String? {
        text.split(separator: "\n").last.map { String(String($0).trimmed().prefix(400)) }
    }
}

import IceboxSystem

/// The cgroup hierarchies of this host, read from /proc/self/mountinfo (never hard-coded:
/// /sys/fs/cgroup on pure v2 hosts, /sys/fs/cgroup/unified on hybrid ones).
package struct CgroupMounts: Equatable, Sendable {
    package var unified: String?  // cgroup2 mount point
    package var freezerV1: String?  // v1 hierarchy with the freezer controller
    package var memoryV1: String?  // v1 hierarchy with the memory controller
    /// Mountinfo's field 4 for each of the three: the cgroup each mount shows at its point
    /// (`CgroupMount`). "/" unless the mount shows a subtree (a host cgroup namespace).
    package var unifiedRoot = "/"
    package var freezerV1MountRoot = "/"
    package var memoryV1MountRoot = "/"
    /// Every reachable cgroup2 mount, in mountinfo's order: `unified` is the first, unless a
    /// cgroup root was asked for on another one (`HostFacts.discover` picks that one).
    package var unifiedMounts: [CgroupMount] = []

    package init(unified: String? = nil, freezerV1: String? = nil, memoryV1: String? = nil) {
        self.unified = unified
        self.freezerV1 = freezerV1
        self.memoryV1 = memoryV1
        if let unified { unifiedMounts = [CgroupMount(point: unified)] }
    }

    /// The hierarchies as `CgroupMount`s, to map /proc/PID/cgroup paths to directories.
    package var unifiedMount: CgroupMount? { unified.map { CgroupMount(point: $0, root: unifiedRoot) } }
    package var freezerV1Mount: CgroupMount? { freezerV1.map { CgroupMount(point: $0, root: freezerV1MountRoot) } }
    package var memoryV1Mount: CgroupMount? { memoryV1.map { CgroupMount(point: $0, root: memoryV1MountRoot) } }

    /// Makes `mount` (one of `unifiedMounts`) the v2 hierarchy icebox uses.
    package mutating func useUnified(_ mount: CgroupMount) {
        unified = mount.point
        unifiedRoot = mount.root
    }

    /// pure: only cgroup2; hybrid: cgroup2 beside v1 controllers; legacy: v1 only.
    package var mode: String {
        switch (unified != nil, freezerV1 != nil || memoryV1 != nil) {
        case (true, false): return "pure cgroup v2"
        case (true, true): return "hybrid (cgroup v2 beside v1 controllers)"
        case (false, true): return "legacy (cgroup v1 only)"
        case (false, false): return "no cgroup filesystems mounted"
        }
    }

    /// Parses mountinfo: id parent major:minor root mountpoint options [optional...] - fstype
    /// source superoptions, octal escapes (\040) decoded. A mount hidden by one over it (or over a
    /// directory above it) is listed but cannot be reached: not counted.
    package static func parse(_ text: String) -> CgroupMounts {
        let entries = text.split(separator: "\n").compactMap(Entry.init)
        var result = CgroupMounts()
        for entry in entries where entry.fsType == "cgroup2" || entry.fsType == "cgroup" {
            guard !entry.isHidden(among: entries) else { continue }
            if entry.fsType == "cgroup2" {
                result.unifiedMounts.append(CgroupMount(point: entry.mountPoint, root: entry.root))
                if result.unified == nil {
                    result.unified = entry.mountPoint
                    result.unifiedRoot = entry.root
                }
            } else if entry.fsType == "cgroup" {
                if entry.superOptions.contains("freezer"), result.freezerV1 == nil {
                    result.freezerV1 = entry.mountPoint
                    result.freezerV1MountRoot = entry.root
                }
                if entry.superOptions.contains("memory"), result.memoryV1 == nil {
                    result.memoryV1 = entry.mountPoint
                    result.memoryV1MountRoot = entry.root
                }
            }
        }
        return result
    }

    /// One line of mountinfo, the fields discovery needs.
    struct Entry {
        var id: Substring
        var parent: Substring
        /// Field 4: the directory shown at the mount point (for cgroups, the cgroup it starts at).
        var root: String
        var mountPoint: String
        var fsType: Substring
        var superOptions: [Substring]

        init?(_ line: Substring) {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let dash = fields.firstIndex(of: "-"), dash + 3 <= fields.count, fields.count > 4 else { return nil }
            id = fields[0]
            parent = fields[1]
            root = CgroupMounts.unescape(String(fields[3]))
            mountPoint = CgroupMounts.unescape(String(fields[4]))
            fsType = fields[dash + 1]
            superOptions = fields.count > dash + 3 ? fields[dash + 3].split(separator: ",") : []
        }

        /// Whether a later mount covers this one: stacked on it, or mounted on one it hangs from
        /// (parent or further up) at or above its point. Judged only from the parents listed, so a
        /// partial mountinfo (a test's, a chroot's) hides nothing it cannot show.
        func isHidden(among entries: [Entry]) -> Bool {
            let byID = Dictionary(entries.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            // This mount and the mounts it hangs from, nearest first, each with the child
            // through which the path to this mount leaves it.
            var chain: [(mount: Entry, via: Entry?)] = [(self, nil)]
            var seen: Set<Substring> = [id]
            while let last = chain.last, let up = byID[last.mount.parent], seen.insert(up.id).inserted {
                chain.append((up, last.mount))
            }
            for other in entries where other.id != id {
                guard let link = chain.first(where: { $0.mount.id == other.parent }) else { continue }
                if let via = link.via {
                    // Mounted beside the path's next mount: it covers it at or above its point.
                    if via.id != other.id && CgroupMounts.covers(other.mountPoint, via.mountPoint) { return true }
                } else if other.mountPoint == mountPoint {
                    return true  // stacked on this mount itself
                }
            }
            return false
        }
    }

    /// Whether `path` is `inner` or above it (whole components: /a covers /a/b, not /ab).
    static func covers(_ path: String, _ inner: String) -> Bool {
        path == inner || path == "/" || inner.hasPrefix(path + "/")
    }

    package static func read(path: String = "/proc/self/mountinfo") -> CgroupMounts {
        // No mountinfo (no /proc): no cgroup mounts, and HostFacts says why none is usable.
        (try? FileIO.read(path)).map(parse) ?? CgroupMounts()
    }

    static func unescape(_ s: String) -> String {
        guard s.contains("\\") else { return s }
        var out: [UInt8] = []
        let b = Array(s.utf8)
        var i = 0
        while i < b.count {
            if b[i] == 92, i + 3 < b.count, let v = UInt8(String(decoding: b[(i + 1)...(i + 3)], as: UTF8.self), radix: 8) {
                out.append(v)
                i += 4
            } else {
                out.append(b[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

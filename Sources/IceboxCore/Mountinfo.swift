import IceboxSystem

/// The cgroup hierarchies of this host, read from /proc/self/mountinfo (never hard-coded:
/// /sys/fs/cgroup on pure v2 hosts, /sys/fs/cgroup/unified on hybrid ones).
public struct CgroupMounts: Equatable, Sendable {
    public var unified: String?  // cgroup2 mount point
    public var freezerV1: String?  // v1 hierarchy with the freezer controller
    public var memoryV1: String?  // v1 hierarchy with the memory controller

    public init(unified: String? = nil, freezerV1: String? = nil, memoryV1: String? = nil) {
        self.unified = unified
        self.freezerV1 = freezerV1
        self.memoryV1 = memoryV1
    }

    /// pure: only cgroup2; hybrid: cgroup2 beside v1 controllers; legacy: v1 only.
    public var mode: String {
        switch (unified != nil, freezerV1 != nil || memoryV1 != nil) {
        case (true, false): return "pure cgroup v2"
        case (true, true): return "hybrid (cgroup v2 beside v1 controllers)"
        case (false, true): return "legacy (cgroup v1 only)"
        case (false, false): return "no cgroup filesystems mounted"
        }
    }

    /// Parses mountinfo text. Fields: id parent major:minor root mountpoint options
    /// [optional fields...] - fstype source superoptions. Octal escapes (\040) are decoded.
    public static func parse(_ text: String) -> CgroupMounts {
        var result = CgroupMounts()
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let dash = fields.firstIndex(of: "-"), dash + 3 <= fields.count, fields.count > 4 else { continue }
            let fsType = fields[dash + 1]
            let mountPoint = unescape(String(fields[4]))
            let superOptions = fields.count > dash + 3 ? fields[dash + 3].split(separator: ",") : []
            if fsType == "cgroup2", result.unified == nil {
                result.unified = mountPoint
            } else if fsType == "cgroup" {
                if superOptions.contains("freezer"), result.freezerV1 == nil { result.freezerV1 = mountPoint }
                if superOptions.contains("memory"), result.memoryV1 == nil { result.memoryV1 = mountPoint }
            }
        }
        return result
    }

    public static func read(path: String = "/proc/self/mountinfo") -> CgroupMounts {
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

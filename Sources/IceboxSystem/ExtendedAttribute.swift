import CIceboxShim
import Glibc

/// Extended attributes of a file (getxattr(2)): how systemd marks a cgroup it delegated.
package enum ExtendedAttribute {
    /// The value of the attribute `name` of `path` (at most `limit` bytes), nil when it has none or
    /// it cannot be read.
    package static func value(of name: String, path: String, limit: Int = 64) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: limit)
        let n = buffer.withUnsafeMutableBytes { getxattr(path, name, $0.baseAddress, limit) }
        guard n >= 0 else { return nil }
        return Array(buffer[..<Int(n)])
    }
}

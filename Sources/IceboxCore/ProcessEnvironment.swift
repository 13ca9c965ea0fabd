import Glibc

/// This process's environment and working directory, read when asked: what `icebox launch`
/// and `IceboxClient.launch(_:)` give an app unless told otherwise.
package enum ProcessEnvironment {
    /// Every `KEY=VALUE` entry of `environ`, in order.
    package static var current: [String] {
        var out: [String] = []
        var p = environ
        while let entry = p.pointee {
            out.append(String(cString: entry))
            p += 1
        }
        return out
    }

    package static var dictionary: [String: String] {
        var d: [String: String] = [:]
        for entry in current {
            guard let eq = entry.firstIndex(of: "=") else { continue }
            d[String(entry[..<eq])] = String(entry[entry.index(after: eq)...])
        }
        return d
    }

    package static var workingDirectory: String? {
        var buf = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buf, 4096) != nil else { return nil }
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

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

    /// The entries by name (a name given twice: the last one), built from the C strings: every
    /// command builds it, and splitting Strings by Character cost `icebox suspend` ~8% of its CPU.
    package static var dictionary: [String: String] {
        var count = 0
        while environ[count] != nil { count += 1 }
        var d: [String: String] = [:]
        d.reserveCapacity(count)
        for i in 0..<count {
            guard let entry = environ[i], let eq = strchr(entry, 0x3D) else { continue }
            let key = UnsafeRawBufferPointer(start: entry, count: eq - entry)
            d[String(decoding: key, as: UTF8.self)] = String(cString: eq + 1)
        }
        return d
    }

    /// One variable (getenv): what a one-shot command needs, without building the table.
    package static func value(_ name: String) -> String? {
        name.withCString { getenv($0) }.map { String(cString: $0) }
    }

    package static var workingDirectory: String? {
        var buf = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buf, 4096) != nil else { return nil }
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

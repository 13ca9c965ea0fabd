import FoundationEssentials
import Synchronization

/// JSON for the control protocol, the event log, the registry and every `--json` output: compact,
/// one object a line, keys sorted so files diff cleanly, and one key style everywhere: snake_case,
/// with durations in nanoseconds ending in `_ns` (`graceNanos` → `grace_ns`, `memoryBytes` →
/// `memory_bytes`).
package enum JSONLines {
    /// The value as one line of JSON, by JSONEncoder. A type with a hand-written form takes
    /// the overload below instead: chosen by the compiler, not by a cast at run time, since
    /// a one-shot client's first conformance lookup scans every conformance in the binary.
    package static func encode<T: Encodable>(_ value: T) -> String {
        encodeWithFoundation(value)
    }

    /// The hand-written form (`JSONWritable`): JSONEncoder's bytes, several times faster.
    package static func encode<T: JSONWritable>(_ value: T) -> String {
        var writer = JSONWriter()
        value.writeJSON(to: &writer)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// What JSONEncoder writes for the value under these settings: the definition the
    /// hand-written forms are held to.
    package static func encodeWithFoundation<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .custom { path in JSONKey(JSONKeyStyle.converted(path.last!.stringValue, by: .snake)) }
        // Only a value whose Encodable conformance throws fails here, and ours (synthesized,
        // strings and numbers) never do: a programming error, not an input.
        guard let data = try? encoder.encode(value) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    package static func decode<T: Decodable>(_ type: T.Type, _ line: String) -> T? {
        // nil answers a line that is not a T (hostile input); decodeOrError gives the reason.
        try? decodeOrError(type, line)
    }

    /// The value a line holds: read by hand if the line is in the plain form JSONWriter
    /// writes (JSONReader), else by JSONDecoder, which decides.
    package static func decode<T: JSONReadable>(_ type: T.Type, _ line: String) -> T? {
        // As above: nil answers a line that is not a T.
        try? decodeOrError(type, line)
    }

    /// The same over bytes (a line of the event log in a read buffer): no String of the line
    /// is made unless JSONDecoder is to read it.
    package static func decode<T: JSONReadable>(_ type: T.Type, bytes: UnsafeRawBufferPointer) -> T? {
        JSONReader.read(bytes) { T(json: &$0) } ?? decode(type, String(decoding: bytes, as: UTF8.self))
    }

    package static func decodeOrError<T: Decodable>(_ type: T.Type, _ line: String) throws -> T {
        try decodeWithFoundation(type, line)
    }

    package static func decodeOrError<T: JSONReadable>(_ type: T.Type, _ line: String) throws -> T {
        if let value = JSONReader.read(line, { T(json: &$0) }) { return value }
        return try decodeWithFoundation(type, line)
    }

    /// What JSONDecoder reads from the line under these settings: the definition JSONReader is held
    /// to.
    package static func decodeWithFoundation<T: Decodable>(_ type: T.Type, _ line: String) throws -> T {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .custom { path in JSONKey(JSONKeyStyle.converted(path.last!.stringValue, by: .camel)) }
        return try decoder.decode(type, from: Data(line.utf8))
    }
}

/// The mapping between Swift property names and the JSON keys. Pure, so it is unit-tested.
package enum JSONKeyStyle {
    package enum Direction: Sendable { case snake, camel }

    /// `snake` or `camel`, remembered per key name (`ps` of 1000 apps converts the same thirty
    /// names 1000 times each); keys decoded come from outside, so the memory is bounded.
    package static func converted(_ key: String, by direction: Direction) -> String {
        if let known = memory.withLock({ $0[direction]?[key] }) { return known }
        let value = direction == .snake ? snake(key) : camel(key)
        memory.withLock { tables in
            if tables[direction, default: [:]].count < 1024 { tables[direction, default: [:]][key] = value }
        }
        return value
    }

    private static let memory = Mutex<[Direction: [String: String]]>([:])

    /// `durationNanos` → `duration_ns`, `freezerV1` → `freezer_v1`, `pid` → `pid`.
    package static func snake(_ name: String) -> String {
        var base = Substring(name)
        var suffix = ""
        if base.hasSuffix("Nanos"), base.count > 5 {
            base = base.dropLast(5)
            suffix = "_ns"
        }
        var out = ""
        for ch in base {
            if ch.isUppercase {
                if !out.isEmpty { out.append("_") }
                out.append(contentsOf: ch.lowercased())
            } else {
                out.append(ch)
            }
        }
        return out + suffix
    }

    /// The inverse: `duration_ns` → `durationNanos`. A key without `_` is taken as it is, so
    /// records written in the older camelCase style still read.
    package static func camel(_ key: String) -> String {
        // `_0` is Swift's own key for an unlabeled associated value: not ours to change.
        guard key.contains("_"), key.first?.isLetter == true else { return key }
        var parts = key.split(separator: "_", omittingEmptySubsequences: true).map(String.init)
        if parts.count > 1, parts.last == "ns" { parts[parts.count - 1] = "nanos" }
        guard let first = parts.first else { return key }
        let name = first + parts.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
        // One key a name: only the key `snake` writes for it maps back to it, so neither
        // "exit_status_" nor "monotonic_nanos" reads as a field (found by the fuzzer).
        return snake(name) == key ? name : key
    }
}

struct JSONKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
    }
}

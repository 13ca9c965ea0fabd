/// Writes JSON bytes as `JSONLines.encode`'s JSONEncoder does (compact, slashes not escaped), for
/// what the daemon writes on every operation (a record a suspend, an event a step, a thousand
/// summaries a `ps`), without JSONEncoder's keyed containers, coding paths and key conversion: each
/// type writes its converted keys in sorted order. `JSONWriterTests` holds the two encoders to the
/// same bytes.
package struct JSONWriter {
    package private(set) var bytes: [UInt8] = []
    /// Whether the container just opened has no member yet (no comma before the next one).
    private var first = true

    package init(capacity: Int = 512) { bytes.reserveCapacity(capacity) }

    // MARK: Containers

    /// `{`, the members `body` writes with the `field` methods (in sorted key order), `}`.
    package mutating func object(_ body: (inout JSONWriter) -> Void) {
        bytes.append(UInt8(ascii: "{"))
        first = true
        body(&self)
        bytes.append(UInt8(ascii: "}"))
        first = false
    }

    /// `[`, each element written by `element`, `]`.
    package mutating func array<S: Sequence>(_ elements: S, _ element: (inout JSONWriter, S.Element) -> Void) {
        bytes.append(UInt8(ascii: "["))
        first = true
        for e in elements {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            element(&self, e)
        }
        bytes.append(UInt8(ascii: "]"))
        first = false
    }

    /// `"key":`, after a comma unless it is the object's first member. `key` is the JSON
    /// key as written (snake_case), not the Swift name.
    package mutating func key(_ key: StaticString) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        bytes.append(UInt8(ascii: "\""))
        // Byte by byte: append(contentsOf:) called memmove for each few-byte key, the largest
        // single cost of writing a record (perf).
        let start = key.utf8Start
        for i in 0..<key.utf8CodeUnitCount { bytes.append(start[i]) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    // MARK: Members (an optional that is nil is left out, as encodeIfPresent does)

    /// `"key":{…}`, the object's members written by `body`.
    package mutating func member(_ name: StaticString, _ body: (inout JSONWriter) -> Void) {
        key(name)
        object(body)
    }

    /// `"key":{}`.
    package mutating func emptyObject(_ name: StaticString) { member(name) { _ in } }

    package mutating func field(_ name: StaticString, _ value: String?) { present(name, value) { $0.string($1) } }

    package mutating func field<N: FixedWidthInteger>(_ name: StaticString, _ value: N?) {
        present(name, value) { $0.integer($1) }
    }

    package mutating func field(_ name: StaticString, _ value: Bool) {
        key(name)
        bool(value)
    }

    package mutating func field<E: RawRepresentable>(_ name: StaticString, _ value: E?) where E.RawValue == String {
        present(name, value) { $0.string($1.rawValue) }
    }

    package mutating func field(_ name: StaticString, _ value: [String]?) {
        present(name, value) { w, strings in w.array(strings) { $0.string($1) } }
    }

    package mutating func field<N: FixedWidthInteger>(_ name: StaticString, _ value: [N]?) {
        present(name, value) { w, numbers in w.array(numbers) { $0.integer($1) } }
    }

    /// A nested object or array with a hand-written form (`[AppRecord]` is one too).
    package mutating func field<W: JSONWritable>(_ name: StaticString, _ value: W?) { present(name, value) { $0.write($1) } }

    /// A value of a type with no hand-written form, through JSONEncoder (the same bytes as
    /// JSONEncoder writes for it nested: its own keys sorted, the same key strategy).
    package mutating func field<T: Encodable>(codable name: StaticString, _ value: T?) {
        present(name, value) { $0.bytes.append(contentsOf: JSONLines.encodeWithFoundation($1).utf8) }
    }

    /// The member, unless the value is nil.
    private mutating func present<T>(_ name: StaticString, _ value: T?, _ write: (inout JSONWriter, T) -> Void) {
        guard let value else { return }
        key(name)
        write(&self, value)
    }

    // MARK: Values

    package mutating func write<W: JSONWritable>(_ value: W) { value.writeJSON(to: &self) }

    /// A string as JSONEncoder writes one: `"` and `\` escaped, the C0 controls as `\b \t \n
    /// \f \r` or `\u00XX` (lowercase hex), everything else (`/`, DEL, non-ASCII) as it is.
    package mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            var start = 0
            for i in 0..<utf8.count {
                let b = utf8[i]
                guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<i]))
                escape(b)
                start = i + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func escape(_ b: UInt8) {
        bytes.append(UInt8(ascii: "\\"))
        switch b {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(b)
        case 0x08: bytes.append(UInt8(ascii: "b"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        case 0x0A: bytes.append(UInt8(ascii: "n"))
        case 0x0C: bytes.append(UInt8(ascii: "f"))
        case 0x0D: bytes.append(UInt8(ascii: "r"))
        default:
            let hex: StaticString = "0123456789abcdef"
            bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
            bytes.append(hex.utf8Start[Int(b >> 4)])
            bytes.append(hex.utf8Start[Int(b & 0xF)])
        }
    }

    package mutating func bool(_ value: Bool) {
        let text: StaticString = value ? "true" : "false"
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// An integer in decimal, `-` for a negative one, without a String in between.
    package mutating func integer<N: FixedWidthInteger>(_ value: N) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        // The magnitude as UInt64 (Int64.min's too); no integer type here is wider.
        var rest = UInt64(value.magnitude)
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: UInt64.max has 20 digits
        withUnsafeMutableBytes(of: &digits) { buffer in
            var start = buffer.count
            repeat {
                start -= 1
                buffer[start] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            } while rest > 0
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[start...]))
        }
    }
}

/// A type with a hand-written JSON form, byte for byte JSONEncoder's under JSONLines'
/// settings. `JSONLines.encode` has an overload for these, chosen where the value's static
/// type conforms (a plain Encodable goes through JSONEncoder: the same bytes, slower).
package protocol JSONWritable: Encodable {
    func writeJSON(to writer: inout JSONWriter)
}

extension Array: JSONWritable where Element: JSONWritable {
    package func writeJSON(to writer: inout JSONWriter) { writer.array(self) { $0.write($1) } }
}

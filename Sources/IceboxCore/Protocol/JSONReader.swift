import Glibc

/// Reads the JSON the daemon writes (`ps` of a thousand apps) without JSONDecoder, which spent
/// about 40 µs an app on keyed containers and coding paths. Only the plain form JSONWriter writes,
/// strictly: keys the type knows, each once, integers as bare digits, strings with JSON's escapes.
/// Anything else (an unknown or camelCase key, `1.0`, a lone surrogate, a duplicate key) returns
/// nil, and `JSONLines.decode` hands the line to JSONDecoder, which decides: the fast path never
/// accepts what it would refuse or read differently (`JSONReaderTests` holds the two to the same
/// results over mangled lines).
package struct JSONReader {
    private let bytes: UnsafeRawBufferPointer
    private var i = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// Runs `read` over the whole of `text`, which must hold one value and nothing but white space
    /// after it.
    static func read<T>(_ text: String, _ read: (inout JSONReader) -> T?) -> T? {
        var text = text
        return text.withUTF8 { Self.read(UnsafeRawBufferPointer($0), read) }
    }

    /// The same over bytes, for a reader that has the line in a buffer: no String of it is
    /// made (and freed) unless the bytes are not in the plain form.
    static func read<T>(_ bytes: UnsafeRawBufferPointer, _ read: (inout JSONReader) -> T?) -> T? {
        var reader = JSONReader(bytes)
        guard let value = read(&reader) else { return nil }
        reader.skipSpace()
        return reader.i == reader.bytes.count ? value : nil
    }

    // MARK: Structure

    /// Reads `{ "key": value, … }`, handing each key to `member`, which reads its value and
    /// returns false for a key it does not know or a value it cannot take. A key seen twice
    /// fails (JSON leaves it to the reader which one counts).
    ///
    /// Keys are taken in the plain form, with no escape (one with an escape is JSONDecoder's:
    /// `"a"` and `"\u0061"` are the same key), so they are compared as bytes (Strings were a
    /// twentieth of `ps`'s client time). They are kept on the stack, up to `maxKeys` (more is
    /// no type's plain form): an array cost every one-shot command its type metadata.
    mutating func object(_ member: (inout JSONReader, String) -> Bool) -> Bool {
        guard take(UInt8(ascii: "{")) else { return false }
        if take(UInt8(ascii: "}")) { return true }
        return withUnsafeTemporaryAllocation(of: Range<Int>.self, capacity: Self.maxKeys) { keys in
            var count = 0
            repeat {
                guard count < Self.maxKeys, let key = plainKey(), take(UInt8(ascii: ":")) else { return false }
                for seen in keys[..<count] where seen.count == key.count {
                    if memcmp(bytes.baseAddress! + seen.lowerBound, bytes.baseAddress! + key.lowerBound, key.count) == 0 { return false }
                }
                keys.initializeElement(at: count, to: key)
                count += 1
                guard member(&self, Self.text(UnsafeRawBufferPointer(rebasing: bytes[key]))) else { return false }
            } while take(UInt8(ascii: ","))
            return take(UInt8(ascii: "}"))
        }
    }

    /// The most keys an object read here may have (AppRecord has the most, well under it).
    static let maxKeys = 64

    /// Where a key's text is (between its quotes), for a key with no escape and no control
    /// character; nil otherwise.
    private mutating func plainKey() -> Range<Int>? {
        skipSpace()
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = i
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                i += 1
                return start..<(i - 1)
            }
            if b < 0x20 || b == UInt8(ascii: "\\") { return nil }
            i += 1
        }
        return nil
    }

    /// Reads `[ value, … ]` with `element` for each value.
    mutating func array<T>(_ element: (inout JSONReader) -> T?) -> [T]? {
        guard take(UInt8(ascii: "[")) else { return nil }
        var out: [T] = []
        if take(UInt8(ascii: "]")) { return out }
        repeat {
            guard let e = element(&self) else { return nil }
            out.append(e)
        } while take(UInt8(ascii: ","))
        return take(UInt8(ascii: "]")) ? out : nil
    }

    /// `null` (consumed: an optional member that is null is absent, as decodeIfPresent has it).
    mutating func null() -> Bool {
        skipSpace()
        return literal("null")
    }

    // MARK: Values

    mutating func bool() -> Bool? {
        skipSpace()
        if literal("true") { return true }
        if literal("false") { return false }
        return nil
    }

    /// An integer written as JSONWriter writes one: `-`? then digits, no leading zero, no
    /// fraction or exponent, in range.
    mutating func integer<N: FixedWidthInteger>(_: N.Type = N.self) -> N? {
        skipSpace()
        let negative = take(UInt8(ascii: "-"))
        let start = i
        var value: N = 0
        while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") {
            let digit = N(bytes[i] - UInt8(ascii: "0"))
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (next, o2) = negative ? times10.subtractingReportingOverflow(digit) : times10.addingReportingOverflow(digit)
            guard !o1, !o2 else { return nil }
            value = next
            i += 1
        }
        let count = i - start
        guard count > 0, count == 1 || bytes[start] != UInt8(ascii: "0"), !(negative && value == 0) else { return nil }
        // A fraction or an exponent next: JSONDecoder's to judge.
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") || bytes[i] | 0x20 == UInt8(ascii: "e") { return nil }
        return value
    }

    /// A string; nil for a raw control character or an unknown escape.
    mutating func string() -> String? {
        skipSpace()
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = i
        var escaped = false
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") { break }
            if b < 0x20 { return nil }
            if b == UInt8(ascii: "\\") {
                escaped = true
                i += 1
            }
            i += 1
        }
        guard i < bytes.count else { return nil }
        let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<i])
        i += 1
        if !escaped { return Self.text(raw) }
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var j = 0
        while j < raw.count {
            var b = raw[j]
            if b == UInt8(ascii: "\\") {
                j += 1
                switch raw[j] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): b = raw[j]
                case UInt8(ascii: "b"): b = 0x08
                case UInt8(ascii: "f"): b = 0x0C
                case UInt8(ascii: "n"): b = 0x0A
                case UInt8(ascii: "r"): b = 0x0D
                case UInt8(ascii: "t"): b = 0x09
                case UInt8(ascii: "u"):
                    // JSONWriter writes the C0 controls so; a surrogate pair is read whole, a
                    // lone surrogate is JSONDecoder's to judge.
                    guard var scalar = Self.hex4(raw, j + 1) else { return nil }
                    j += 5
                    if scalar >= 0xD800 && scalar < 0xDC00 {
                        guard raw.count - j >= 6, raw[j] == UInt8(ascii: "\\"), raw[j + 1] == UInt8(ascii: "u"),
                            let low = Self.hex4(raw, j + 2), low >= 0xDC00 && low < 0xE000
                        else { return nil }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        j += 6
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { return nil }
                    out.append(contentsOf: UTF8.encode(unicode)!)
                    continue
                default: return nil
                }
            }
            out.append(b)
            j += 1
        }
        return out.withUnsafeBytes(Self.text)
    }

    /// The bytes as a String, valid UTF-8 without a check: they come from a String (`read`),
    /// cut only at ASCII quotes, or are escapes encoded here (`String(validating:)` cost a
    /// one-shot client ~0.1 ms of type metadata lookups at its first non-ASCII character).
    private static func text(_ utf8: UnsafeRawBufferPointer) -> String {
        String(decoding: utf8, as: UTF8.self)
    }

    /// Four hex digits at `at` (either case), as `\u` takes them.
    private static func hex4(_ raw: UnsafeRawBufferPointer, _ at: Int) -> UInt32? {
        guard raw.count - at >= 4 else { return nil }
        var value: UInt32 = 0
        for k in at..<(at + 4) {
            let c = raw[k]
            let digit: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = c - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// A string member that is one of an enum's raw values.
    mutating func raw<E: RawRepresentable>(_: E.Type = E.self) -> E? where E.RawValue == String {
        string().flatMap(E.init(rawValue:))
    }

    mutating func strings() -> [String]? { array { $0.string() } }

    // MARK: Bytes

    /// Passes over one value without decoding it (a one-shot command's `event` of a `line`
    /// reply), checked as strictly as the rest: objects of plain keys, arrays, strings,
    /// integers as JSONWriter writes them, `true`, `false`, `null`; anything else (a fraction,
    /// an exponent, nesting past 16) fails, and the line is JSONDecoder's.
    mutating func skipValue(depth: Int = 0) -> Bool {
        guard depth < 16 else { return false }
        skipSpace()
        guard i < bytes.count else { return false }
        switch bytes[i] {
        case UInt8(ascii: "{"):
            i += 1
            if take(UInt8(ascii: "}")) { return true }
            while true {
                guard string() != nil, take(UInt8(ascii: ":")), skipValue(depth: depth + 1) else { return false }
                if take(UInt8(ascii: ",")) { continue }
                return take(UInt8(ascii: "}"))
            }
        case UInt8(ascii: "["):
            i += 1
            if take(UInt8(ascii: "]")) { return true }
            while true {
                guard skipValue(depth: depth + 1) else { return false }
                if take(UInt8(ascii: ",")) { continue }
                return take(UInt8(ascii: "]"))
            }
        case UInt8(ascii: "\""): return string() != nil
        case UInt8(ascii: "t"): return literal("true")
        case UInt8(ascii: "f"): return literal("false")
        case UInt8(ascii: "n"): return literal("null")
        default:
            _ = take(UInt8(ascii: "-"))
            let start = i
            while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") { i += 1 }
            // No leading zero (JSON's rule), no fraction or exponent (JSONWriter writes none).
            guard i > start, bytes[start] != UInt8(ascii: "0") || i == start + 1 else { return false }
            return i == bytes.count || (bytes[i] != UInt8(ascii: ".") && bytes[i] != UInt8(ascii: "e") && bytes[i] != UInt8(ascii: "E"))
        }
    }

    // MARK: Members in an order known beforehand (JSONRecord)

    /// `{`, taken.
    mutating func openObject() -> Bool { take(UInt8(ascii: "{")) }

    /// `}`, taken (an empty object, right after `openObject`).
    mutating func closeObject() -> Bool { take(UInt8(ascii: "}")) }

    /// What follows a member's value: `,` (another member), `}` (the end), or neither.
    mutating func afterMember() -> MemberEnd {
        if take(UInt8(ascii: ",")) { return .another }
        return take(UInt8(ascii: "}")) ? .end : .malformed
    }

    enum MemberEnd { case another, end, malformed }

    /// Takes `"key":` if that is what comes next, the key's bytes as JSONWriter writes them
    /// (no escape); else takes nothing.
    mutating func member(named key: StaticString) -> Bool {
        skipSpace()
        let n = key.utf8CodeUnitCount, start = i
        guard bytes.count - i >= n + 2, bytes[i] == UInt8(ascii: "\""), bytes[i + n + 1] == UInt8(ascii: "\""),
            memcmp(bytes.baseAddress! + i + 1, key.utf8Start, n) == 0
        else { return false }
        i += n + 2
        guard take(UInt8(ascii: ":")) else {
            i = start
            return false
        }
        return true
    }

    mutating func skipSpace() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
    }

    private mutating func take(_ byte: UInt8) -> Bool {
        skipSpace()
        guard i < bytes.count, bytes[i] == byte else { return false }
        i += 1
        return true
    }

    private mutating func literal(_ text: StaticString) -> Bool {
        let n = text.utf8CodeUnitCount
        guard bytes.count - i >= n else { return false }
        for k in 0..<n where bytes[i + k] != text.utf8Start[k] { return false }
        i += n
        return true
    }
}

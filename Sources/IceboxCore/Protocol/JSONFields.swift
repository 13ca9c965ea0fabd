import Glibc

/// One definition of a record type's JSON (a registry record with its launch options and identity,
/// an event, `ps`'s summary): `visitFields` lists its fields (the JSON key, the value, how to set
/// it), and from that one list come the hand-written form the daemon writes and reads on its hot
/// paths (`JSONWriter`, `JSONReader`) and the type's `Codable` conformance (a line not in the plain
/// form, a user's own decoder). `JSONFieldsTests` checks that the list names every stored property.
///
/// A visitor, not a table of closures: each form is the list specialized for its visitor,
/// straight-line code (closures cost a fifth more writing `ps --json`, in reference counting).
///
/// Codable keys are the Swift names, as synthesized: the JSON key converted back
/// (`JSONKeyStyle.camel`), so `JSONLines`' key strategy turns them into the JSON keys again and a
/// plain JSONDecoder reads the camelCase form.
package protocol JSONRecord: JSONWritable, JSONReadable {
    /// Hands each field to `visitor`, in the byte order of the keys (JSONEncoder's `.sortedKeys`).
    func visitFields<V: JSONFieldVisitor>(_ visitor: inout V) where V.Root == Self
    /// The value reading starts from: every required field is read over it, and an optional
    /// one absent from the line is nil in it.
    static var jsonBlank: Self { get }
}

/// What goes over a record's fields: a writer, a reader, an encoder, a decoder.
package protocol JSONFieldVisitor {
    associatedtype Root
    /// A non-optional property: always written, required when read. `group` marks fields a
    /// type writes apart (AppRecord's launch-time members).
    mutating func required<T: JSONFieldValue>(_ key: StaticString, _ value: T, group: Int, _ set: (inout Root, T) -> Void)
    /// An optional one: left out while nil; `null` reads as nil (as decodeIfPresent has it).
    mutating func optional<T: JSONFieldValue>(_ key: StaticString, _ value: T?, group: Int, _ set: (inout Root, T?) -> Void)
    /// A non-optional property with a default: always written; when read, absent (or `null`)
    /// keeps the default the blank value has (LaunchOptions: a client writes what it means).
    mutating func defaulted<T: JSONFieldValue>(_ key: StaticString, _ value: T, _ set: (inout Root, T) -> Void)
}

extension JSONFieldVisitor {
    mutating func required<T: JSONFieldValue>(_ key: StaticString, _ value: T, _ set: (inout Root, T) -> Void) {
        required(key, value, group: 0, set)
    }

    mutating func optional<T: JSONFieldValue>(_ key: StaticString, _ value: T?, _ set: (inout Root, T?) -> Void) {
        optional(key, value, group: 0, set)
    }
}

extension JSONRecord {
    package func writeJSON(to w: inout JSONWriter) {
        w.object { w in writeFields(to: &w) }
    }

    /// The fields of `group` (nil: all of them), or all but those of `except`, in key order,
    /// inside an object the caller opened.
    package func writeFields(to w: inout JSONWriter, group: Int? = nil, except: Int? = nil) {
        // The bytes are the visitor's until it hands them back: swapped, not copied, so no
        // second reference makes the next append copy them.
        var writer = FieldWriter<Self>(w: JSONWriter(capacity: 0), group: group, except: except)
        swap(&writer.w, &w)
        visitFields(&writer)
        swap(&writer.w, &w)
    }

    /// Reads the members in the list's order, in as many passes as the line needs: one for a line
    /// JSONWriter wrote whole, two for the registry's (launch-time members at the end). A line the
    /// passes cannot finish (an unknown key, a key twice, members shuffled) is JSONDecoder's.
    package init?(json r: inout JSONReader) {
        guard r.openObject() else { return nil }
        var reader = FieldReader(r: r, record: Self.jsonBlank)
        // `{}`. Only a `}`: afterMember would also take a `,`, and `{,"app":…` was read (fuzz).
        if reader.r.closeObject() { reader.state = .ended }
        var passes = 0
        repeat {  // once at least, which also marks the required fields (`{}` lacks them)
            let before = reader.seen
            reader.index = 0
            Self.jsonBlank.visitFields(&reader)
            passes += 1
            if reader.state == .reading && reader.seen == before { return nil }  // a key no field has
        } while reader.state == .reading && passes < 3
        guard reader.state == .ended, reader.seen & reader.required == reader.required else { return nil }
        r = reader.r
        self = reader.record
    }

    /// `encode(to:)` for the type's Codable conformance.
    package func encodeFields(to encoder: any Encoder) throws {
        var visitor = FieldEncoder<Self>(container: encoder.container(keyedBy: JSONKey.self))
        visitFields(&visitor)
        if let error = visitor.error { throw error }
    }

    /// `init(from:)` for the type's Codable conformance.
    package init(fieldsFrom decoder: any Decoder) throws {
        var visitor = FieldDecoder(container: try decoder.container(keyedBy: JSONKey.self), record: Self.jsonBlank)
        Self.jsonBlank.visitFields(&visitor)
        if let error = visitor.error { throw error }
        self = visitor.record
    }
}

/// The key Codable uses for a JSON key: the Swift name it comes from.
private func codingKey(_ key: StaticString) -> JSONKey {
    JSONKey(JSONKeyStyle.camel(key.description))
}

private struct FieldWriter<Root>: JSONFieldVisitor {
    var w: JSONWriter
    let group: Int?, except: Int?

    func wanted(_ g: Int) -> Bool { (group == nil || group == g) && except != g }

    mutating func required<T: JSONFieldValue>(_ key: StaticString, _ value: T, group g: Int, _: (inout Root, T) -> Void) {
        guard wanted(g) else { return }
        w.key(key)
        value.writeField(to: &w)
    }

    mutating func optional<T: JSONFieldValue>(_ key: StaticString, _ value: T?, group g: Int, _: (inout Root, T?) -> Void) {
        guard let value, wanted(g) else { return }
        w.key(key)
        value.writeField(to: &w)
    }

    mutating func defaulted<T: JSONFieldValue>(_ key: StaticString, _ value: T, _ set: (inout Root, T) -> Void) {
        required(key, value, group: 0, set)
    }
}

private struct FieldReader<Root>: JSONFieldVisitor {
    var r: JSONReader
    var record: Root
    var state = State.reading
    /// The fields read, and the required ones, by their place in the list (fewer than 64).
    var seen: UInt64 = 0, required: UInt64 = 0
    var index = 0

    enum State { case reading, ended, failed }

    mutating func required<T: JSONFieldValue>(_ key: StaticString, _: T, group: Int, _ set: (inout Root, T) -> Void) {
        required |= 1 << UInt64(index)
        read(key) { r, record in
            guard let value = T.readField(&r) else { return false }
            set(&record, value)
            return true
        }
    }

    mutating func optional<T: JSONFieldValue>(_ key: StaticString, _: T?, group: Int, _ set: (inout Root, T?) -> Void) {
        read(key) { r, record in
            if r.null() { return true }
            guard let value = T.readField(&r) else { return false }
            set(&record, value)
            return true
        }
    }

    mutating func defaulted<T: JSONFieldValue>(_ key: StaticString, _ value: T, _ set: (inout Root, T) -> Void) {
        optional(key, value, group: 0) { record, read in if let read { set(&record, read) } }
    }

    /// Reads the field's value if its key comes next in the line.
    private mutating func read(_ key: StaticString, _ value: (inout JSONReader, inout Root) -> Bool) {
        let bit: UInt64 = 1 << UInt64(index)
        index += 1
        guard state == .reading, r.member(named: key) else { return }
        guard seen & bit == 0, value(&r, &record) else {
            state = .failed  // a key twice (JSON leaves it to the reader which counts), or a value not ours
            return
        }
        seen |= bit
        switch r.afterMember() {
        case .another: break
        case .end: state = .ended
        case .malformed: state = .failed
        }
    }
}

private struct FieldEncoder<Root>: JSONFieldVisitor {
    var container: KeyedEncodingContainer<JSONKey>
    var error: (any Error)?

    mutating func required<T: JSONFieldValue>(_ key: StaticString, _ value: T, group: Int, _: (inout Root, T) -> Void) {
        guard error == nil else { return }
        do { try container.encode(value, forKey: codingKey(key)) } catch { self.error = error }
    }

    mutating func optional<T: JSONFieldValue>(_ key: StaticString, _ value: T?, group: Int, _: (inout Root, T?) -> Void) {
        guard error == nil else { return }
        do { try container.encodeIfPresent(value, forKey: codingKey(key)) } catch { self.error = error }
    }

    mutating func defaulted<T: JSONFieldValue>(_ key: StaticString, _ value: T, _ set: (inout Root, T) -> Void) {
        required(key, value, group: 0, set)
    }
}

private struct FieldDecoder<Root>: JSONFieldVisitor {
    let container: KeyedDecodingContainer<JSONKey>
    var record: Root
    var error: (any Error)?

    mutating func required<T: JSONFieldValue>(_ key: StaticString, _: T, group: Int, _ set: (inout Root, T) -> Void) {
        guard error == nil else { return }
        do { set(&record, try container.decode(T.self, forKey: codingKey(key))) } catch { self.error = error }
    }

    mutating func optional<T: JSONFieldValue>(_ key: StaticString, _: T?, group: Int, _ set: (inout Root, T?) -> Void) {
        guard error == nil else { return }
        do { set(&record, try container.decodeIfPresent(T.self, forKey: codingKey(key))) } catch { self.error = error }
    }

    mutating func defaulted<T: JSONFieldValue>(_ key: StaticString, _ value: T, _ set: (inout Root, T) -> Void) {
        optional(key, value, group: 0) { record, read in if let read { set(&record, read) } }
    }
}

/// A value a field can hold, in JSONWriter's plain form and as Codable.
package protocol JSONFieldValue: Codable {
    func writeField(to w: inout JSONWriter)
    static func readField(_ r: inout JSONReader) -> Self?
}

extension String: JSONFieldValue {
    package func writeField(to w: inout JSONWriter) { w.string(self) }
    package static func readField(_ r: inout JSONReader) -> String? { r.string() }
}

extension Bool: JSONFieldValue {
    package func writeField(to w: inout JSONWriter) { w.bool(self) }
    package static func readField(_ r: inout JSONReader) -> Bool? { r.bool() }
}

extension JSONFieldValue where Self: FixedWidthInteger {
    package func writeField(to w: inout JSONWriter) { w.integer(self) }
    package static func readField(_ r: inout JSONReader) -> Self? { r.integer() }
}

extension Int: JSONFieldValue {}
extension Int32: JSONFieldValue {}
extension UInt32: JSONFieldValue {}
extension UInt64: JSONFieldValue {}

extension Array: JSONFieldValue where Element: JSONFieldValue {
    package func writeField(to w: inout JSONWriter) { w.array(self) { $1.writeField(to: &$0) } }
    package static func readField(_ r: inout JSONReader) -> [Element]? { r.array { Element.readField(&$0) } }
}

/// An enum kept as its raw text.
extension JSONFieldValue where Self: RawRepresentable, RawValue == String {
    package func writeField(to w: inout JSONWriter) { w.string(rawValue) }
    package static func readField(_ r: inout JSONReader) -> Self? { r.raw() }
}

/// A nested value with a hand-written form of its own.
extension JSONFieldValue where Self: JSONWritable & JSONReadable {
    package func writeField(to w: inout JSONWriter) { writeJSON(to: &w) }
    package static func readField(_ r: inout JSONReader) -> Self? { Self(json: &r) }
}

// The values of the records' fields that are not the standard library's.
extension AppState: JSONFieldValue {}
extension AppLifecycle.Ending: JSONFieldValue {}
extension BackendChoice: JSONFieldValue {}
extension BackendKind: JSONFieldValue {}
extension DiskIntent: JSONFieldValue {}
extension EventKind: JSONFieldValue {}
extension EvictionReason.Kind: JSONFieldValue {}
extension EvictionTarget: JSONFieldValue {}
extension LaunchOptions: JSONFieldValue {}
extension NoticeSignal: JSONFieldValue {}
extension PriorityBand: JSONFieldValue {}
extension ReadyMode: JSONFieldValue {}
extension RunAs: JSONFieldValue {}
extension WatchdogAction: JSONFieldValue {}

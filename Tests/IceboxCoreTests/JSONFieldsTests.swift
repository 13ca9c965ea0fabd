import Foundation
import Testing

@testable import IceboxCore

/// A persisted type's one definition of its JSON (`JSONRecord`, its list of fields): the list
/// names every stored property, once, in key order; the fast forms and Codable come from it
/// and agree; Codable's keys are the Swift names a synthesized conformance had, so records in
/// the old camelCase form and users' own decoders still read.
@Suite("One list of fields a persisted type")
struct JSONFieldsTests {
    static func keys<R: JSONRecord>(_: R.Type) -> [String] { jsonKeys(R.self).map(\.key) }

    /// Each field's JSON key and whether it is required, in the list's order.
    static func jsonKeys<R: JSONRecord>(_: R.Type) -> [(key: String, isRequired: Bool)] {
        var visitor = FieldKeys<R>()
        R.jsonBlank.visitFields(&visitor)
        return visitor.keys
    }

    struct FieldKeys<Root>: JSONFieldVisitor {
        var keys: [(key: String, isRequired: Bool)] = []

        mutating func required<T: JSONFieldValue>(_ key: StaticString, _: T, group: Int, _: (inout Root, T) -> Void) {
            keys.append((key.description, true))
        }

        mutating func optional<T: JSONFieldValue>(_ key: StaticString, _: T?, group: Int, _: (inout Root, T?) -> Void) {
            keys.append((key.description, false))
        }

        mutating func defaulted<T: JSONFieldValue>(_ key: StaticString, _: T, _: (inout Root, T) -> Void) {
            keys.append((key.description, false))
        }
    }

    /// A record with every optional member set, each to a value of its own.
    static func fullRecord() -> AppRecord {
        var g = JSONWriterTests.Generator(state: 7)
        var r = g.record()
        r.cgroup = "/sys/fs/cgroup/x"
        r.freezerV1 = "f"
        r.coldStartNanos = 1
        r.lastFreezeNanos = 2
        r.lastThawNanos = 3
        r.statusText = "s"
        r.exitStatus = -4
        r.ending = "e"
        r.memoryBytes = 5
        r.memoryV1 = "m"
        r.memorySource = "memory.current"
        r.lastCompaction = "c"
        r.graceStartNanos = 6
        r.graceDeadlineNanos = 7
        r.graceCapNanos = 8
        r.endIntent = .evict
        r.endStartNanos = 11
        r.killDeadlineNanos = 12
        r.diskIntent = .checkpoint
        r.diskIntentStartNanos = 16
        r.diskWorker = 17
        r.diskWorkerStartTicks = 18
        r.images = "/i"
        r.imageBytes = 19
        r.lastCheckpointNanos = 20
        r.lastRestoreNanos = 21
        r.runsAs = RunAs(uid: 1, gid: 2, groups: [3], user: "u", group: "g")
        r.notifySocket = "/n"
        r.restartTimesNanos = [13, 14]
        r.adoptedFrom = "/a"
        r.adoptedFromFreezerV1 = "/f"
        r.adoptedFromMemoryV1 = "/m"
        r.adoptMoveNanos = 15
        return r
    }

    /// The record's members as the list writes them, one `"key":value` each (nil ones left out).
    static func members(_ record: AppRecord) -> [(key: String, text: String)] {
        var visitor = MemberTexts()
        record.visitFields(&visitor)
        return visitor.members
    }

    struct MemberTexts: JSONFieldVisitor {
        var members: [(key: String, text: String)] = []

        mutating func required<T: JSONFieldValue>(_ key: StaticString, _ value: T, group: Int, _: (inout AppRecord, T) -> Void) {
            var w = JSONWriter()
            w.key(key)
            value.writeField(to: &w)
            let text = String(decoding: w.bytes, as: UTF8.self)
            members.append((String(text.dropFirst().prefix { $0 != "\"" }), text))
        }

        mutating func optional<T: JSONFieldValue>(_ key: StaticString, _ value: T?, group: Int, _ set: (inout AppRecord, T?) -> Void) {
            if let value { required(key, value, group: group) { _, _ in } }
        }

        mutating func defaulted<T: JSONFieldValue>(_ key: StaticString, _ value: T, _: (inout AppRecord, T) -> Void) {
            required(key, value, group: 0) { _, _ in }
        }
    }

    static func line(_ members: [(key: String, text: String)]) -> String {
        "{" + members.map(\.text).joined(separator: ",") + "}"
    }

    /// Each persisted type's stored properties (Mirror) against its list: the same names
    /// (Event's `kind` is `event` in JSON and in Codable, as its CodingKeys had it), once each,
    /// keys sorted as JSONEncoder sorts them.
    static func expectListCovers<R: JSONRecord>(_: R.Type, renamed: [String: String] = [:]) {
        let properties = Mirror(reflecting: R.jsonBlank).children.compactMap(\.label).map { renamed[$0] ?? $0 }
        let keys = Self.keys(R.self)
        let named = keys.map { JSONKeyStyle.camel($0) }
        #expect(
            Set(properties) == Set(named),
            "\(R.self): stored but not in the list: \(Set(properties).subtracting(named)); in the list only: \(Set(named).subtracting(properties))"
        )
        #expect(named.count == Set(named).count, "\(R.self): a property twice in the list: \(named)")
        #expect(properties.count == named.count, "\(R.self)")
        #expect(keys.map { Array($0.utf8) }.lexicographicallySorted(), "\(R.self): \(keys)")
        #expect(keys.count < 64, "\(R.self): the reader keeps the fields it has seen in a UInt64, one bit each")
        for key in keys where key.contains("_") {
            #expect(JSONKeyStyle.camel(key) != key && JSONKeyStyle.snake(JSONKeyStyle.camel(key)) == key, "\(R.self): \(key)")
        }
    }

    @Test("each persisted type's list names every stored property once, and nothing else, its keys sorted")
    func listCoversEveryProperty() {
        Self.expectListCovers(AppRecord.self)
        Self.expectListCovers(LaunchOptions.self)
        Self.expectListCovers(RunAs.self)
        Self.expectListCovers(Event.self, renamed: ["kind": "event"])
        Self.expectListCovers(AppSummary.self)
        Self.expectListCovers(IceboxError.Reason.Wire.self)
    }

    @Test("the required fields are the non-optional properties: a line without one is refused, by both readers")
    func requiredFieldsAreTheNonOptionalOnes() {
        let members = Self.members(Self.fullRecord())
        #expect(members.count == Self.jsonKeys(AppRecord.self).count)
        for field in Self.jsonKeys(AppRecord.self) {
            let key = field.key
            let shorter = Self.line(members.filter { $0.key != key })
            let fast = JSONReader.read(shorter) { AppRecord(json: &$0) }
            let slow = try? JSONLines.decodeWithFoundation(AppRecord.self, shorter)
            #expect((fast == nil) == field.isRequired, "\(key): the fast reader \(fast == nil ? "refused" : "took") the line without it")
            #expect((slow == nil) == field.isRequired, "\(key): JSONDecoder \(slow == nil ? "refused" : "took") the line without it")
        }
        #expect(Self.jsonKeys(AppRecord.self).filter(\.isRequired).count == 12)
        // No member at all: refused, not the blank value.
        #expect(JSONReader.read("{}") { AppRecord(json: &$0) } == nil)
        #expect(JSONReader.read("{}") { Event(json: &$0) } == nil && JSONLines.decode(Event.self, "{}") == nil)
    }

    /// Found by scripts/fuzz (event-line): the check for `{}` took the `,` of `{,"app":…` as
    /// the end of a member, and the line was read where JSONDecoder refuses it.
    @Test("a comma where a member or `}` must come is refused by the fast reader")
    func strayCommasAreRefused() {
        let good = "{\"app\":\"web\",\"detail\":\"x\",\"event\":\"freeze\",\"monotonic_ns\":1,\"pid\":4,\"time\":\"t\"}"
        #expect(JSONReader.read(good) { Event(json: &$0) } != nil, "the line the others are made from reads")
        for line in [
            good.replacingOccurrences(of: "{", with: "{,"), good.replacingOccurrences(of: ",\"detail", with: ",,\"detail"),
            good.replacingOccurrences(of: "}", with: ",}"), "{,}",
        ] {
            #expect(JSONReader.read(line) { Event(json: &$0) } == nil, "\(line)")
        }
        // The fuzzer's line, which JSONDecoder refuses. (A trailing comma it takes: such a line is
        // left to it, as any line the fast reader declines.)
        #expect((try? JSONLines.decodeWithFoundation(Event.self, good.replacingOccurrences(of: "{", with: "{,"))) == nil)
    }

    @Test("written and read back by the fast forms and by Codable, the record is the same, every field included")
    func roundTrips() throws {
        let record = Self.fullRecord()
        let fast = JSONLines.encode(record)
        #expect(fast == JSONLines.encodeWithFoundation(record))
        let readFast = try #require(JSONReader.read(fast) { AppRecord(json: &$0) }, "the fast reader refused \(fast)")
        #expect(JSONLines.encode(readFast) == fast)
        #expect(JSONLines.encode(try JSONLines.decodeWithFoundation(AppRecord.self, fast)) == fast)
        // Every member of the table was written: each key is in the line.
        for key in Self.keys(AppRecord.self) { #expect(fast.contains("\"\(key)\":"), "\(key) missing from \(fast)") }
    }

    @Test("Codable's keys are the Swift names: a plain JSONEncoder writes camelCase, and such a line (the old registry form) reads")
    func codableKeysAreTheSwiftNames() throws {
        let record = Self.fullRecord()
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let camel = String(decoding: try encoder.encode(record), as: UTF8.self)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(camel.utf8)) as? [String: Any])
        let properties = Set(Mirror(reflecting: record).children.compactMap(\.label))
        #expect(Set(object.keys) == properties, "\(Set(object.keys).symmetricDifference(properties))")
        #expect(object["sinceMonotonicNanos"] != nil && object["adoptedFromFreezerV1"] != nil)
        // A user's own JSONDecoder reads it back, and so does icebox (JSONDecoder, as the
        // fast reader refuses camelCase keys).
        let theirs = try JSONDecoder().decode(AppRecord.self, from: Data(camel.utf8))
        #expect(JSONLines.encode(theirs) == JSONLines.encode(record))
        #expect(JSONReader.read(camel) { AppRecord(json: &$0) } == nil)
        #expect(JSONLines.decode(AppRecord.self, camel).map(JSONLines.encode) == JSONLines.encode(record))
    }

    @Test(
        "members in another order read the same (the registry's split order by the fast reader); a member twice is the fast reader's to refuse"
    )
    func anyOrder() throws {
        let record = Self.fullRecord()
        let line = JSONLines.encode(record)
        var members = Self.members(record)
        #expect(Self.line(members) == line)
        // The registry's layout: its launch-time members at the end. Read in two passes.
        let (head, tail) = Registry.layout(record)
        let split = String(decoding: head + tail, as: UTF8.self)
        #expect(split != line)
        #expect(JSONReader.read(split) { AppRecord(json: &$0) }.map(JSONLines.encode) == line, "\(split)")
        var g = JSONWriterTests.Generator(state: 3)
        for _ in 0..<20 {
            for i in members.indices.reversed() { members.swapAt(i, g.below(i + 1)) }
            let shuffled = Self.line(members)
            #expect(JSONLines.decode(AppRecord.self, shuffled).map(JSONLines.encode) == line, "\(shuffled)")
            let doubled = Self.line(members + [members[0]])
            #expect(JSONReader.read(doubled) { AppRecord(json: &$0) } == nil, "a member twice: \(members[0].key)")
        }
    }

    @Test("LaunchOptions: name and command are all a line needs; an absent or null member keeps its default, in both readers")
    func launchOptionsDefaults() throws {
        let defaults = LaunchOptions(name: "web", command: ["sleep", "1"])
        for line in [
            #"{"command":["sleep","1"],"name":"web"}"#,
            #"{"command":["sleep","1"],"grace_ns":null,"name":"web","priority":null,"ready":null}"#,
        ] {
            let fast = try #require(JSONReader.read(line) { LaunchOptions(json: &$0) }, "the fast reader refused \(line)")
            let slow = try JSONLines.decodeWithFoundation(LaunchOptions.self, line)
            #expect(fast == defaults && slow == defaults, "\(line)")
        }
        for line in [#"{"name":"web"}"#, #"{"command":["sleep"]}"#] {
            #expect(JSONReader.read(line) { LaunchOptions(json: &$0) } == nil && JSONLines.decode(LaunchOptions.self, line) == nil)
        }
        var changed = defaults
        changed.graceNanos = 7
        changed.priority = .critical
        changed.evictTo = .disk
        #expect(JSONLines.decode(LaunchOptions.self, JSONLines.encode(changed)) == changed)
        #expect(JSONLines.encode(changed) == JSONLines.encodeWithFoundation(changed))
    }

    @Test("a reason on the wire: the fast forms write and read every case as Codable does")
    func reasonWire() throws {
        for wire in IceboxErrorReasonTests.all.compactMap(\.wire) {
            let line = JSONLines.encode(wire)
            #expect(line == JSONLines.encodeWithFoundation(wire))
            #expect(JSONReader.read(line) { IceboxError.Reason.Wire(json: &$0) } == wire, "\(line)")
        }
    }

    @Test("Event: kind is `event` in JSON and in Codable (its old CodingKeys), the others their Swift names")
    func eventKeys() throws {
        var event = Event(time: "t", monotonicNanos: 1, app: "a", kind: .freeze, detail: "d")
        event.tasks = 3
        event.graceNanos = 5
        let camel = String(decoding: try JSONEncoder().encode(event), as: UTF8.self)
        #expect(camel.contains(#""event":"freeze""#) && camel.contains(#""graceNanos":5"#) && !camel.contains("kind"), "\(camel)")
        #expect(try JSONDecoder().decode(Event.self, from: Data(camel.utf8)) == event)
        let line = JSONLines.encode(event)
        #expect(line == #"{"app":"a","detail":"d","event":"freeze","grace_ns":5,"monotonic_ns":1,"tasks":3,"time":"t"}"#)
        #expect(JSONReader.read(line) { Event(json: &$0) } == event)
    }
}

extension Array where Element == [UInt8] {
    fileprivate func lexicographicallySorted() -> Bool {
        zip(self, dropFirst()).allSatisfy { $0.lexicographicallyPrecedes($1) }
    }
}

import Testing

@testable import IceboxCore

/// JSONReader (the hand-written reading `ps` uses) against JSONDecoder, the definition:
/// on what the daemon writes it must read the same values, and on anything else (lines
/// mangled at random: bytes changed, members dropped or doubled, numbers written other
/// ways, camelCase keys, nulls) it may only give up, never accept what JSONDecoder refuses
/// or read it differently. `JSONLines.decode` must then answer as JSONDecoder does.
@Suite("Hand-written JSON reading is JSONDecoder's")
struct JSONReaderTests {
    typealias Generator = JSONWriterTests.Generator

    /// The value both readers take from `line`, compared through their encodings (AppRecord
    /// and ControlReply are not Equatable). Returns whether the fast path took the line, and
    /// whether JSONDecoder did.
    @discardableResult
    func expectSameReading<T: JSONReadable & Encodable & SendableMetatype>(
        _ type: T.Type, _ line: String, _ what: String
    ) -> (fast: Bool, slow: Bool) {
        let fast = JSONReader.read(line) { T(json: &$0) }.map(JSONLines.encode)
        let slow = (try? JSONLines.decodeWithFoundation(T.self, line)).map(JSONLines.encode)
        let decoded = JSONLines.decode(T.self, line).map(JSONLines.encode)
        if let fast {
            #expect(slow == fast, "\(what): the fast path read \(line) as \(fast), JSONDecoder as \(slow ?? "an error")")
        }
        #expect(decoded == slow, "\(what): JSONLines.decode and JSONDecoder read \(line) differently")
        return (fast != nil, slow != nil)
    }

    /// One random change to the line, of a kind JSONDecoder may refuse or read otherwise.
    static func mangle(_ line: String, _ g: inout Generator) -> String {
        var bytes = Array(line.utf8)
        let at = g.below(bytes.count)
        switch g.below(9) {
        case 0:
            bytes[at] = g.pick(Array("\"\\,:{}[]0-.eEn x/t".utf8) + [0x01, 0x7F])
        case 1:
            bytes.insert(g.pick(Array(" \t\n\r\"\\,0-+.e".utf8) + [0x00]), at: at)
        case 2:
            bytes.removeSubrange(at..<min(bytes.count, at + 1 + g.below(8)))
        case 3:  // a number written otherwise
            guard let digit = bytes[at...].firstIndex(where: { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
            else { break }
            let forms = [".0", "e0", "E1", "0", ".5"]
            bytes.insert(contentsOf: Array(g.pick(forms).utf8), at: digit + 1)
        case 4:  // a member dropped: from a key's quote to the next comma
            guard let quote = bytes[at...].firstIndex(of: UInt8(ascii: "\"")),
                let comma = bytes[quote...].firstIndex(of: UInt8(ascii: ","))
            else { break }
            bytes.removeSubrange(quote...comma)
        case 5:  // a member doubled, or a key of another type's
            guard let brace = bytes[at...].firstIndex(of: UInt8(ascii: "{")) else { break }
            let extra = g.pick([#""name":"x","#, #""pid":1,"#, #""zzz":1,"#, #""kind":"line","#, #""event":null,"#])
            bytes.insert(contentsOf: Array(extra.utf8), at: brace + 1)
        case 6:  // a value made null
            guard let colon = bytes[at...].firstIndex(of: UInt8(ascii: ":")),
                let end = bytes[colon...].firstIndex(where: { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "}") })
            else { break }
            bytes.replaceSubrange((colon + 1)..<end, with: Array("null".utf8))
        case 7:  // a key in the camelCase of older records
            let text = String(decoding: bytes, as: UTF8.self)
            let keys = ["\"since_wall\"", "\"exit_status\"", "\"grace_ns\"", "\"memory_bytes\"", "\"name_is_default\""]
            let key = g.pick(keys)
            let camel = "\"" + JSONKeyStyle.camel(String(key.dropFirst().dropLast())) + "\""
            if let range = text.range(of: key) { return text.replacingCharacters(in: range, with: camel) }
        default:  // an escape JSONWriter does not write
            guard let quote = bytes[at...].firstIndex(of: UInt8(ascii: "\"")) else { break }
            bytes.insert(contentsOf: Array(g.pick([#"\u0041"#, #"\/"#, #"\ud83e\uddca"#, #"\x"#, #"\u00"#]).utf8), at: quote + 1)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6] as [UInt64])
    func whatTheDaemonWritesReadsTheSame(seed: UInt64) {
        var g = Generator(state: seed)
        for round in 0..<100 {
            // Both or neither: the generator makes some values JSONDecoder refuses too
            // (a ready mode of tcp:0), and the fast path must refuse those, take the rest.
            func expectBoth<T: JSONReadable & Encodable & SendableMetatype>(_ type: T.Type, _ line: String) {
                let took = expectSameReading(type, line, "\(type) \(seed)/\(round)")
                #expect(took.fast == took.slow, "the fast path gave up on \(line)")
            }
            let record = g.record()
            expectBoth(AppRecord.self, JSONLines.encode(record))
            expectBoth(AppSummary.self, JSONLines.encode(record.summary))
            var reply = ControlReply(kind: .data)
            reply.summaries = (0..<g.below(3)).map { _ in g.record().summary }
            reply.apps = g.chance() ? (0..<g.below(3)).map { _ in g.record() } : nil
            expectBoth(ControlReply.self, JSONLines.encode(reply))
            expectBoth(ControlReply.self, JSONLines.encode(ControlReply(kind: .done, code: g.integer())))
            let request = g.request()
            let took = expectSameReading(ControlRequest.self, JSONLines.encode(request), "ControlRequest \(seed)/\(round)")
            switch request {
            case .ping, .ps, .suspend, .resume, .switchTo, .evict: #expect(took.fast, "the fast path gave up on \(request)")
            default: break  // JSONDecoder's
            }
        }
    }

    @Test(arguments: [11, 12, 13, 14, 15, 16, 17, 18] as [UInt64])
    func mangledLinesReadAsJSONDecoderReadsThem(seed: UInt64) {
        var g = Generator(state: seed)
        var taken = 0
        for round in 0..<400 {
            var line: String
            switch g.below(4) {
            case 0: line = JSONLines.encode(g.record())
            case 3: line = JSONLines.encode(g.request())
            case 1: line = JSONLines.encode(g.record().summary)
            default:
                var reply = ControlReply(kind: .data, text: g.optionalString(), code: g.optional())
                reply.summaries = [g.record().summary]
                line = JSONLines.encode(reply)
            }
            for _ in 0...g.below(3) { line = Self.mangle(line, &g) }
            let what = "seed \(seed) round \(round)"
            if expectSameReading(AppRecord.self, line, what).fast { taken += 1 }
            if expectSameReading(AppSummary.self, line, what).fast { taken += 1 }
            if expectSameReading(ControlReply.self, line, what).fast { taken += 1 }
            if expectSameReading(ControlRequest.self, line, what).fast { taken += 1 }
        }
        // Some mangled lines are still good JSON of the plain form (white space, a changed
        // letter in a string): the fast path must have taken some, or this compared nothing.
        #expect(taken > 0)
    }

    /// The comparison can fail: a reader that took `1.0` as 1 would read a line JSONDecoder
    /// reads otherwise or refuses, and the two readings differ.
    @Test func theComparisonSeesADifference() {
        let line = #"{"kind":"done","code":1.5}"#
        #expect(JSONReader.read(line) { ControlReply(json: &$0) } == nil)
        #expect((try? JSONLines.decodeWithFoundation(ControlReply.self, line)).map(JSONLines.encode) != #"{"code":1,"kind":"done"}"#)
    }

    /// Keys are compared as bytes on the fast path, so a key spelled with an escape is left
    /// to JSONDecoder: `"n\u0061me"` is `"name"`, twice over when both are there.
    @Test func keysWithEscapesAreJSONDecodersToRead() {
        let plain = #"{"kind":"done","code":3}"#
        let escaped = #"{"kind":"done","c\u006fde":3}"#
        let twice = #"{"kind":"done","code":3,"c\u006fde":4}"#
        #expect(JSONReader.read(plain) { ControlReply(json: &$0) }?.code == 3)
        #expect(JSONReader.read(escaped) { ControlReply(json: &$0) } == nil, "the fast path gives up on an escaped key")
        #expect(JSONLines.decode(ControlReply.self, escaped)?.code == 3, "and JSONDecoder reads it")
        #expect(JSONReader.read(twice) { ControlReply(json: &$0) } == nil)
        expectSameReading(ControlReply.self, twice, "a key twice, once escaped")
        expectSameReading(ControlReply.self, #"{"kind":"done","code":3,"code":4}"#, "a key twice")
        #expect(JSONReader.read(#"{"kind":"done","code":3,"code":4}"#) { ControlReply(json: &$0) } == nil)
    }
}

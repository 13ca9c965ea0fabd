import Testing

@testable import IceboxCore

/// `ps --json` prints the daemon's array of apps as it came: only a line that is exactly
/// `{"apps":[…],"kind":"data"}` is taken apart, and the array's end is found by structure.
@Suite("DaemonConnection.appsArray")
struct RawAppsTests {
    func span(_ line: String) -> String? {
        let bytes = Array(line.utf8)
        return DaemonConnection.appsArray(in: bytes[...]).map { String(decoding: bytes[$0], as: UTF8.self) }
    }

    @Test func theArrayOfAPlainDataReplyIsFound() {
        #expect(span(#"{"apps":[],"kind":"data"}"#) == "[]")
        #expect(span(#"{"apps":[{"a":1},{"b":[2,3]}],"kind":"data"}"#) == #"[{"a":1},{"b":[2,3]}]"#)
        // Brackets, braces and escaped quotes inside strings do not count.
        let tricky = #"[{"name":"x]}\"],\"kind","cmd":["{[","\\"]}]"#
        #expect(span(#"{"apps":"# + tricky + #","kind":"data"}"#) == tricky)
    }

    @Test func anyOtherLineIsLeftToTheDecoder() {
        #expect(span(#"{"apps":[],"code":0,"kind":"data"}"#) == nil, "a member between: the array ends early")
        #expect(span(#"{"apps":[{"a":1}],"extra":[1],"kind":"data"}"#) == nil)
        #expect(span(#"{"kind":"data","apps":[]}"#) == nil)
        #expect(span(#"{"apps":[],"kind":"line"}"#) == nil)
        #expect(span(#"{"apps":[{"a":"]"],"kind":"data"}"#) == nil, "unbalanced")
        #expect(span(#"{"apps":[,"kind":"data"}"#) == nil)
        // A real reply, written by the daemon's writer, is taken, and its array is what the
        // client would have written from the decoded records.
        var reply = ControlReply(kind: .data)
        reply.apps = []
        #expect(span(JSONLines.encode(reply)) == JSONLines.encode([AppRecord]()))
    }
}

import Foundation
import Testing

@testable import IceboxCore

/// A `line` reply's `event` (the step's event, for IceboxClient's typed results) is read by
/// the fast reader as JSONDecoder reads it, and passed over, checked, by a one-shot command.
@Suite("ControlReply: the event a line carries")
struct ReplyEventReadingTests {
    static let sample = event()

    static func event() -> Event {
        var e = Event(
            app: "web", pid: 42, kind: .freeze, from: .background, to: .suspended, durationNanos: 340, detail: "frozen → µs",
            at: Instant(monotonicNanos: 7, wallNanos: 0))
        e.reason = "READY=1"
        e.backend = .cgroup2
        e.tasks = 3
        e.graceNanos = 1_000
        e.exitStatus = -1
        e.band = .high
        e.memoryBeforeBytes = 1
        e.memoryAfterBytes = 2
        e.victimMemoryBytes = 3
        e.pids = [1, 2]
        e.evictedFor = .maxSuspended
        return e
    }

    static func line(_ event: Event?) -> String {
        var reply = ControlReply(kind: .line, text: "web  background → suspended")
        reply.event = event
        return JSONLines.encode(reply)
    }

    @Test("the fast reader reads every member of an event as JSONDecoder does")
    func fastEqualsDecoder() throws {
        let text = Self.line(Self.sample)
        let fast = try #require(JSONReader.read(text) { ControlReply(json: &$0) })
        let slow = try JSONLines.decodeWithFoundation(ControlReply.self, text)
        #expect(fast.event == Self.sample && slow.event == fast.event)
        #expect(JSONReader.read(JSONLines.encode(Self.sample)) { Event(json: &$0) } == Self.sample)
    }

    @Test("a one-shot command passes over a line's event; an event reply and a malformed event are JSONDecoder's")
    func passedOver() throws {
        let text = Self.line(Self.sample)
        let skipped = try #require(JSONReader.read(text) { ControlReply(json: &$0, lineEvents: false) })
        #expect(skipped.event == nil && skipped.text == "web  background → suspended" && skipped.kind == .line)
        var eventReply = ControlReply(kind: .event)
        eventReply.event = Self.sample
        #expect(JSONReader.read(JSONLines.encode(eventReply)) { ControlReply(json: &$0, lineEvents: false) } == nil)
        #expect(JSONLines.decode(ControlReply.self, JSONLines.encode(eventReply))?.event == Self.sample)
        for bad in [
            #"{"event":{"a":1.5},"kind":"line"}"#, #"{"event":{"a":01},"kind":"line"}"#, #"{"event":{"a":[1,]},"kind":"line"}"#,
            #"{"event":{"a" 1},"kind":"line"}"#, #"{"event":tru,"kind":"line"}"#,
        ] {
            #expect(JSONReader.read(bad) { ControlReply(json: &$0, lineEvents: false) } == nil, "\(bad)")
        }
        #expect(
            JSONReader.read(#"{"event":{"a":[1,-2,{"b":null}],"c":true},"kind":"line"}"#) { ControlReply(json: &$0, lineEvents: false) }
                != nil)
    }
}

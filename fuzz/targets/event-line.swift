// A libFuzzer target (scripts/fuzz builds and runs it; fuzz/README.md).
// One line of the event log, as `icebox log` and every other reader of the log reads it:
// the hand-written reader (JSONReader, Event's JSONReadable), checked against JSONDecoder.
// Where the hand-written reader takes a line, JSONDecoder must read the same event from it
// (a log file is anyone's to edit); a line it declines is JSONDecoder's alone.
@testable import IceboxCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    guard let fast = JSONReader.read(bytes, { Event(json: &$0) }) else { return 0 }
    let slow = try? JSONLines.decodeWithFoundation(Event.self, String(decoding: bytes, as: UTF8.self))
    precondition(slow == fast, "the hand-written reader read \(fast), JSONDecoder \(slow as Any)")
    return 0
}

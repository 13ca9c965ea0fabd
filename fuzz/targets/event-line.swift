// A libFuzzer target (scripts/fuzz builds and runs it; fuzz/README.md).
// One line of the event log, as `icebox log` reads it: the fast field parser, checked
// against JSONDecoder: where both read a line, they must read the same printed fields (a
// log file is anyone's to edit). The fast parser does not check the types of the fields it
// does not print, so a line JSONDecoder rejects for one of those may still be shown.
import IceboxCore

@testable import IceboxCLI

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    guard let fast = EventLineParser.parse(bytes) else { return 0 }
    guard let slow = JSONLines.decode(Event.self, String(decoding: bytes, as: UTF8.self)) else { return 0 }
    precondition(fast.app == slow.app && fast.kind == slow.kind && fast.detail == slow.detail, "fields differ")
    precondition(fast.time == slow.time && fast.from == slow.from && fast.to == slow.to, "fields differ")
    precondition(fast.pid == slow.pid && fast.exitStatus == slow.exitStatus && fast.monotonicNanos == slow.monotonicNanos, "fields differ")
    return 0
}

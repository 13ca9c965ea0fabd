// A libFuzzer target (scripts/fuzz builds and runs it; fuzz/README.md).
// Durations as users type them (--grace, --timeout, policy settings), and their display.
import IceboxCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    if let nanos = DurationText.parse(String(decoding: bytes, as: UTF8.self)) { _ = DurationText.format(nanos) }
    if bytes.count >= 8 {
        var raw: UInt64 = 0
        for b in bytes.prefix(8) { raw = raw << 8 | UInt64(b) }
        _ = DurationText.format(raw)
    }
    return 0
}

// A libFuzzer target (scripts/fuzz builds and runs it; fuzz/README.md).
// Signal names and numbers (--background-signal, --foreground-signal, freeze --signal).
import IceboxSystem

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    if let n = Signals.number(of: String(decoding: bytes, as: UTF8.self)) { _ = Signals.name(of: n) }
    if bytes.count >= 4 {
        var raw: UInt32 = 0
        for b in bytes.prefix(4) { raw = raw << 8 | UInt32(b) }
        _ = Signals.name(of: Int32(bitPattern: raw))
    }
    return 0
}

// A libFuzzer target (scripts/fuzz builds and runs it; fuzz/README.md).
// The /proc parsers: stat (and its sigcatch field), status fields, signal masks, cgroup
// membership, kB values.
import IceboxSystem

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    _ = ProcFS.parseStat(text)
    let signals: [Int32] = [0, 1, 10, 64, 65]
    if let caught = ProcFS.caughtSignals(inStatLine: text) {
        for signal in signals { _ = ProcFS.maskHasSignal(caught, signal) }
    }
    for field in ["SigCgt", "SigBlk", "VmRSS", "State"] {
        guard let value = ProcFS.statusField(field, in: text) else { continue }
        _ = ProcFS.parseKiloBytes(value)
        if let mask = UInt64(value, radix: 16) {
            for signal in signals { _ = ProcFS.maskHasSignal(mask, signal) }
        }
    }
    _ = ProcFS.unifiedCgroup(in: text)
    _ = ProcFS.parseKiloBytes(text)
    return 0
}

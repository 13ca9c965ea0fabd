// A libFuzzer target (scripts/fuzz builds and runs it; fuzz/README.md).
// The /proc parsers: stat, status fields, signal masks, cgroup membership, kB values.
import IceboxSystem

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    _ = ProcFS.parseStat(text)
    for field in ["SigCgt", "SigBlk", "VmRSS", "State"] {
        guard let value = ProcFS.statusField(field, in: text) else { continue }
        _ = ProcFS.parseKiloBytes(value)
        for signal: Int32 in [0, 1, 10, 64, 65] { _ = ProcFS.maskHasSignal(value, signal) }
    }
    _ = ProcFS.unifiedCgroup(in: text)
    _ = ProcFS.parseKiloBytes(text)
    return 0
}

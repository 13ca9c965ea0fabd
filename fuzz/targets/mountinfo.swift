// A libFuzzer target (scripts/fuzz builds and runs it; fuzz/README.md).
// /proc/self/mountinfo, as the host discovery reads it.
import IceboxCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    _ = CgroupMounts.parse(String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self))
    return 0
}

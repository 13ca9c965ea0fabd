// A libFuzzer target (scripts/fuzz builds and runs it; fuzz/README.md).
// Sizes (--memory-budget) and the policy's other settings and PSI trigger specs.
import IceboxCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let bytes = SizeText.parse(text) { _ = SizeText.format(bytes) }
    for key in ["memory-budget", "max-suspended", "eviction-grace", "compact-after", "pressure-scope", "protect-active"] {
        _ = try? PolicySetting.parse(key: key, value: text)
    }
    _ = try? PressureSpec.parse(text, privileged: true)
    _ = try? PressureSpec.parse(text, privileged: false)
    return 0
}

// A libFuzzer target (scripts/fuzz builds and runs it; fuzz/README.md).
// The daemon's request decoder: any line a client of our uid can send.
import IceboxCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let line = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let request = try? JSONLines.decodeOrError(ControlRequest.self, line) {
        // What the daemon does with a request before acting on it.
        _ = request.commandName
        _ = JSONLines.encode(request)
        if case .setPolicy(let settings) = request {
            var policy = EvictionPolicy()
            for s in settings { policy.apply(s); _ = s.summary }
        }
    }
    return 0
}

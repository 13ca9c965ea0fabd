// A libFuzzer target (scripts/fuzz builds and runs it; fuzz/README.md).
// sd_notify datagrams: anything a process can send to an app's NOTIFY_SOCKET.
import IceboxCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let m = NotifyMessage.parse(String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self))
    _ = (m.ready, m.watchdogPing, m.watchdogTrigger, m.watchdogNanos, m.stopping, m.status, m.extendNanos)
    return 0
}

// A libFuzzer target (scripts/fuzz builds and runs it; fuzz/README.md).
// A reply line as the client reads it: the decoder, and the byte scan that finds the apps
// array `ps --json` prints as it came. Where the scan takes a line, the line must decode,
// and the array it found must be the one the decoder read.
@testable import IceboxCore
@testable import IceboxSystem

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let line = String(decoding: bytes, as: UTF8.self)
    let reply = JSONLines.decode(ControlReply.self, line)
    if let span = DaemonConnection.appsArray(in: bytes[...]) {
        // A span is only ever taken from a line that is the plain form of a data reply.
        guard bytes.first == UInt8(ascii: "{"), span.lowerBound >= 8, span.upperBound <= bytes.count else { fatalError("bad span \(span)") }
        if let reply, reply.kind == .data, let apps = reply.apps {
            let array = String(decoding: bytes[span], as: UTF8.self)
            if JSONLines.decode(AppRecordList.self, "{\"apps\":" + array + "}")?.apps.count != apps.count {
                fatalError("the scan's array is not the decoder's: \(array)")
            }
        }
    }
    _ = FileIO.parseCounter(UnsafeBufferPointer(start: data, count: size))
    return 0
}

/// `{"apps":[…]}`, to read the array the scan found on its own.
struct AppRecordList: Decodable {
    var apps: [AppRecord]
}

import IceboxCore
import Testing

/// The library's evict with `toDisk`: the request it sends, against the fake daemon (no root).
@Suite(.timeLimit(.minutes(5)))
struct EvictToDiskClientTests {
    let done = [ControlReply(kind: .done, code: 0)]

    @Test("evict(_:toDisk:) sends to_disk for one name and for several; without it, the kill")
    func requestCarriesToDisk() throws {
        var request: ControlRequest?
        let one = try FakeDaemon.answering(done, received: { request = $0 }) { client in try client.evict("web", toDisk: true) }
        #expect(request == .evict(names: ["web"], toDisk: true))
        #expect(one.name == "web")
        let several = try FakeDaemon.answering(done, received: { request = $0 }) { client in
            try client.evict(["web", "db"], toDisk: true)
        }
        #expect(request == .evict(names: ["web", "db"], toDisk: true))
        #expect(several.map(\.name) == ["web", "db"])
        _ = try FakeDaemon.answering(done, received: { request = $0 }) { client in try client.evict("web") }
        #expect(request == .evict(names: ["web"], toDisk: false))
        _ = try FakeDaemon.answering(done, received: { request = $0 }) { client in try client.evict(["web"]) }
        #expect(request == .evict(names: ["web"], toDisk: false))
    }
}

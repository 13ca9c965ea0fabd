import Glibc
import IceboxTestSupport
import Testing

@testable import IceboxCore

/// A record's file: the changing head, room, the launch-time tail (Registry.layout), and
/// what a state change does to it.
@Suite("Registry files")
struct RegistryTests {
    /// Read back as the same record as its plain JSON line, by the hand reader (or the
    /// JSONDecoder it hands over to) and by JSONDecoder alone; the generator's values include
    /// ones neither takes (`ready` "cmd:"), and those must fail alike.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func aRecordsFileReadsBackAsItsPlainLineDoes(seed: UInt64) {
        var g = JSONWriterTests.Generator(state: seed)
        var read = 0
        for round in 0..<100 {
            let record = g.record()
            let (head, tail) = Registry.layout(record)
            let file = String(decoding: head + repeatElement(UInt8(ascii: " "), count: Registry.headRoom) + tail, as: UTF8.self)
            let line = JSONLines.encode(record)
            let plain = JSONLines.decode(AppRecord.self, line).map { JSONLines.encode($0) }
            #expect(JSONLines.decode(AppRecord.self, file).map { JSONLines.encode($0) } == plain, "seed \(seed) round \(round)")
            let plainSlow = (try? JSONLines.decodeWithFoundation(AppRecord.self, line)).map { JSONLines.encode($0) }
            let slow = (try? JSONLines.decodeWithFoundation(AppRecord.self, file)).map { JSONLines.encode($0) }
            #expect(slow == plainSlow, "seed \(seed) round \(round): JSONDecoder")
            if plain != nil { read += 1 }
        }
        #expect(read > 10, "too few records the decoders take to mean anything: \(read)")
    }

    @Test func aStateChangeRewritesTheFileInPlaceAndALaunchTimeChangeMakesANewOne() throws {
        let dir = makeTemporaryDirectory("registry")
        defer { removeTree(dir) }
        var record = AppLifecycleTests.record()
        // Over a page whole: before, every state change of such a record was a new file.
        record.options.environment = ["BIG=" + String(repeating: "x", count: 5000)]
        try Registry.write(record, directory: dir, durable: true)
        let path = dir + "/web.json"
        func inode() -> ino_t {
            var st = stat()
            return stat(path, &st) == 0 ? st.st_ino : 0
        }
        func onDisk() -> [String] { Registry.load(directory: dir).map { JSONLines.encode($0) } }
        let first = inode()
        record.state = .suspended
        record.pid = 5
        record.statusText = String(repeating: "s", count: 200)
        try Registry.write(record, directory: dir, durable: false)
        #expect(inode() == first, "the head rewritten in place")
        #expect(onDisk() == [JSONLines.encode(record)])
        record.statusText = String(repeating: "s", count: 400)  // past the head's room
        try Registry.write(record, directory: dir, durable: false)
        #expect(inode() != first, "a new file: the head outgrew its room")
        #expect(onDisk() == [JSONLines.encode(record)])
        let second = inode()
        record.options.environment.append("MORE=1")
        try Registry.write(record, directory: dir, durable: false)
        #expect(inode() != second, "a new file: the launch-time part changed")
        #expect(onDisk() == [JSONLines.encode(record)])
        let third = inode()
        record.state = .active
        try Registry.write(record, directory: dir, durable: true)
        #expect(inode() != third, "a durable write is a new file, synced")
        #expect(onDisk() == [JSONLines.encode(record)])
    }
}

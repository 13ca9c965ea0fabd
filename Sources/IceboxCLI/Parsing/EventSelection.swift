import Glibc
import IceboxCore

/// Which events `icebox log` prints, and how. The log writes `{"app":"NAME",...` (keys
/// sorted), so with a NAME most lines are turned away by their first bytes; only the rest are
/// decoded (JSONLines.decode, as every reader of the log; a line it cannot read is skipped).
final class EventSelection {
    let name: String?
    let since: Int64?
    let until: Int64?
    let json: Bool
    let color: Bool
    private let canonical = Array(#"{"app":""#.utf8)
    private let namePrefix: [UInt8]?
    /// Whether any event of `name` was seen, within the times asked for or not.
    private(set) var sawApp: Bool

    init(name: String?, since: Int64?, until: Int64?, json: Bool, color: Bool) {
        (self.name, self.since, self.until, self.json, self.color) = (name, since, until, json, color)
        namePrefix = name.map { Array(#"{"app":""#.utf8) + Array($0.utf8) + [UInt8(ascii: "\"")] }
        sawApp = name == nil
    }

    /// The text to print for a line of the log, or nil if it is not one of those asked for.
    func render(_ line: UnsafeRawBufferPointer) -> String? {
        if let namePrefix, Self.starts(line, with: canonical), !Self.starts(line, with: namePrefix) { return nil }
        guard let event = JSONLines.decode(Event.self, bytes: line) else { return nil }
        if let name, event.app != name { return nil }
        sawApp = true
        if since != nil || until != nil {
            guard let wall = TimeText.parseTimestamp(event.time, offset: TimeText.localOffset) else { return nil }
            if let since, wall < since { return nil }
            if let until, wall > until { return nil }
        }
        return json ? String(decoding: line, as: UTF8.self) : EventText.line(event, color: color)
    }

    static func starts(_ line: UnsafeRawBufferPointer, with prefix: [UInt8]) -> Bool {
        line.count >= prefix.count && prefix.withUnsafeBytes { memcmp(line.baseAddress!, $0.baseAddress!, prefix.count) == 0 }
    }
}

import FoundationEssentials

/// JSON for the control protocol, the event log and the registry: compact, one object a
/// line, keys sorted so files diff cleanly.
public enum JSONLines {
    public static func encode<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    public static func decode<T: Decodable>(_ type: T.Type, _ line: String) -> T? {
        try? JSONDecoder().decode(type, from: Data(line.utf8))
    }

    public static func decodeOrError<T: Decodable>(_ type: T.Type, _ line: String) throws -> T {
        try JSONDecoder().decode(type, from: Data(line.utf8))
    }
}

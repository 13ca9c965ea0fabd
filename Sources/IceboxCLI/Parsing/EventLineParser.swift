import Glibc
import IceboxCore

/// Reads the fields `icebox log` prints (time, app, event, from, to, pid, exit_status,
/// detail, monotonic_ns) from one line of the event log, without JSONDecoder, which costs
/// about ten microseconds a line: a 300k-event log took seconds. It knows the flat objects
/// JSONLines writes; anything else (an escape inside a string, a malformed line) returns
/// nil, and the caller falls back to JSONLines.decode, which decides. The other fields are
/// skipped, not decoded.
enum EventLineParser {
    static func parse(_ line: UnsafeRawBufferPointer) -> Event? {
        var scanner = Scanner(bytes: line)
        return scanner.event()
    }

    private struct Scanner {
        let bytes: UnsafeRawBufferPointer
        var i = 0

        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        mutating func event() -> Event? {
            var time: String?, app: String?, kind: EventKind?, detail: String?, monotonic: UInt64?
            var from: AppState?, to: AppState?, pid: Int32?, exitStatus: Int32?
            var seen: Set<Key> = []
            skipSpace()
            guard take(UInt8(ascii: "{")) else { return nil }
            skipSpace()
            if !take(UInt8(ascii: "}")) {
                while true {
                    skipSpace()
                    guard let key = rawString() else { return nil }
                    skipSpace()
                    guard take(UInt8(ascii: ":")) else { return nil }
                    skipSpace()
                    let which = Key(key)
                    // A key twice: JSON leaves it to the reader which one counts; the fallback decides.
                    if which != .other {
                        guard !seen.contains(which) else { return nil }
                        seen.insert(which)
                    }
                    switch which {
                    case .time: guard let v = string() else { return nil }; time = v
                    case .app: guard let v = string() else { return nil }; app = v
                    case .detail: guard let v = string() else { return nil }; detail = v
                    case .event: guard let v = string(), let k = EventKind(rawValue: v) else { return nil }; kind = k
                    case .from: guard let v = optionalState() else { return nil }; from = v
                    case .to: guard let v = optionalState() else { return nil }; to = v
                    case .monotonic: guard let v = number(), let n = UInt64(v) else { return nil }; monotonic = n
                    case .pid: guard let v = optionalInt32() else { return nil }; pid = v
                    case .exitStatus: guard let v = optionalInt32() else { return nil }; exitStatus = v
                    case .other: guard skipValue() else { return nil }
                    }
                    skipSpace()
                    if take(UInt8(ascii: ",")) { continue }
                    guard take(UInt8(ascii: "}")) else { return nil }
                    break
                }
            }
            skipSpace()
            guard i == bytes.count, let time, let app, let kind, let detail, let monotonic else { return nil }
            var event = Event(time: time, monotonicNanos: monotonic, app: app, kind: kind, detail: detail)
            event.from = from
            event.to = to
            event.pid = pid
            event.exitStatus = exitStatus
            return event
        }

        enum Key {
            case time, app, detail, event, from, to, monotonic, pid, exitStatus, other
            init(_ key: UnsafeRawBufferPointer) {
                func equals(_ s: StaticString) -> Bool {
                    s.utf8CodeUnitCount == key.count && memcmp(s.utf8Start, key.baseAddress!, key.count) == 0
                }
                if key.isEmpty {
                    self = .other
                } else if equals("time") {
                    self = .time
                } else if equals("app") {
                    self = .app
                } else if equals("detail") {
                    self = .detail
                } else if equals("event") {
                    self = .event
                } else if equals("from") {
                    self = .from
                } else if equals("to") {
                    self = .to
                } else if equals("monotonic_ns") {
                    self = .monotonic
                } else if equals("pid") {
                    self = .pid
                } else if equals("exit_status") {
                    self = .exitStatus
                } else {
                    self = .other
                }
            }
        }

        var current: UInt8? { i < bytes.count ? bytes[i] : nil }

        mutating func take(_ byte: UInt8) -> Bool {
            guard current == byte else { return false }
            i += 1
            return true
        }

        mutating func skipSpace() {
            while let b = current, b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D { i += 1 }
        }

        /// A string's bytes between its quotes; nil if it holds an escape (not ours to
        /// decode: the fallback does) or does not end.
        mutating func rawString() -> UnsafeRawBufferPointer? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = i
            while let b = current {
                if b == UInt8(ascii: "\"") {
                    i += 1
                    return UnsafeRawBufferPointer(rebasing: bytes[start..<(i - 1)])
                }
                if b == UInt8(ascii: "\\") || b < 0x20 { return nil }
                i += 1
            }
            return nil
        }

        mutating func string() -> String? {
            rawString().map { String(decoding: $0, as: UTF8.self) }
        }

        mutating func takeNull() -> Bool {
            guard i + 4 <= bytes.count, bytes[i] == UInt8(ascii: "n"), bytes[i + 1] == UInt8(ascii: "u"),
                bytes[i + 2] == UInt8(ascii: "l"), bytes[i + 3] == UInt8(ascii: "l")
            else { return false }
            i += 4
            return true
        }

        /// A state, or null (.some(nil)); nil when the value is not valid.
        mutating func optionalState() -> AppState?? {
            if takeNull() { return .some(nil) }
            guard let text = string(), let state = AppState(rawValue: text) else { return nil }
            return .some(state)
        }

        /// A 32-bit whole number, or null (.some(nil)); nil when the value is not valid.
        mutating func optionalInt32() -> Int32?? {
            if takeNull() { return .some(nil) }
            guard let text = number(), let n = Int32(text) else { return nil }
            return .some(n)
        }

        /// A whole number's text as JSON writes one (-?(0|[1-9][0-9]*)); nil for anything
        /// else, a fraction or an exponent included: the fallback decides those (Swift's own
        /// integer parsing would take "+5" and "05", which JSON does not).
        mutating func number() -> String? {
            let start = i
            guard skipInteger() else { return nil }
            if let b = current, b == UInt8(ascii: ".") || b == UInt8(ascii: "e") || b == UInt8(ascii: "E") { return nil }
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        }

        /// -?(0|[1-9][0-9]*), and nothing else (a digit after a leading 0 is not JSON).
        mutating func skipInteger() -> Bool {
            _ = take(UInt8(ascii: "-"))
            guard let first = current, isDigit(first) else { return false }
            i += 1
            if first != UInt8(ascii: "0") { while let b = current, isDigit(b) { i += 1 } }
            return !(current.map(isDigit) ?? false)
        }

        func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }

        /// Skips one value of a field that is not printed, checking its syntax as JSON's
        /// grammar has it (so a line JSONDecoder would reject as malformed is not read here
        /// either): a string with valid escapes, a number, true/false/null, or an array or
        /// object nested at most 32 deep. Its type is not checked against Event's.
        mutating func skipValue(depth: Int = 0) -> Bool {
            guard depth < 32 else { return false }
            skipSpace()
            guard let b = current else { return false }
            switch b {
            case UInt8(ascii: "\""): return skipString()
            case UInt8(ascii: "["):
                i += 1
                skipSpace()
                if take(UInt8(ascii: "]")) { return true }
                repeat {
                    guard skipValue(depth: depth + 1) else { return false }
                    skipSpace()
                } while take(UInt8(ascii: ","))
                return take(UInt8(ascii: "]"))
            case UInt8(ascii: "{"):
                i += 1
                skipSpace()
                if take(UInt8(ascii: "}")) { return true }
                repeat {
                    skipSpace()
                    guard skipString() else { return false }
                    skipSpace()
                    guard take(UInt8(ascii: ":")), skipValue(depth: depth + 1) else { return false }
                    skipSpace()
                } while take(UInt8(ascii: ","))
                return take(UInt8(ascii: "}"))
            case UInt8(ascii: "t"): return skipLiteral("true")
            case UInt8(ascii: "f"): return skipLiteral("false")
            case UInt8(ascii: "n"): return skipLiteral("null")
            default: return skipNumber()
            }
        }

        mutating func skipLiteral(_ word: StaticString) -> Bool {
            let n = word.utf8CodeUnitCount
            guard i + n <= bytes.count, memcmp(word.utf8Start, bytes.baseAddress! + i, n) == 0 else { return false }
            i += n
            return true
        }

        /// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
        mutating func skipNumber() -> Bool {
            guard skipInteger() else { return false }
            if take(UInt8(ascii: ".")) {
                guard let d = current, isDigit(d) else { return false }
                while let b = current, isDigit(b) { i += 1 }
            }
            if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
                if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
                guard let d = current, isDigit(d) else { return false }
                while let b = current, isDigit(b) { i += 1 }
            }
            return true
        }

        /// A string with JSON's escapes (\" \\ \/ \b \f \n \r \t \uXXXX), no raw control bytes.
        mutating func skipString() -> Bool {
            guard take(UInt8(ascii: "\"")) else { return false }
            while let c = current {
                i += 1
                if c == UInt8(ascii: "\"") { return true }
                if c < 0x20 { return false }
                guard c == UInt8(ascii: "\\") else { continue }
                guard let e = current else { return false }
                i += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                    UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    continue
                case UInt8(ascii: "u"):
                    for _ in 0..<4 {
                        guard let h = current, isDigit(h) || (h | 0x20 >= UInt8(ascii: "a") && h | 0x20 <= UInt8(ascii: "f")) else {
                            return false
                        }
                        i += 1
                    }
                default: return false
                }
            }
            return false
        }
    }
}

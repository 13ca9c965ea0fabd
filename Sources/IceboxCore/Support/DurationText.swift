/// Durations as people type them: 250ms, 5s, 1.5s, 2m, 1m30s, 100us, 1h; a plain number is seconds.
/// Values are nanoseconds.
package enum DurationText {
    static let units: [(String, Double)] = [
        ("ns", 1), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9), ("m", 60e9), ("h", 3600e9),
    ]

    package static func parse(_ text: String) -> UInt64? {
        if text.isEmpty { return nil }
        if let seconds = Double(text) {
            // Range-checked: UInt64(_:) traps on a value it cannot hold.
            let nanos = seconds * 1e9
            return nanos >= 0 && nanos < 1.8e19 ? UInt64(nanos) : nil
        }
        var total = 0.0
        var rest = Substring(text)
        while !rest.isEmpty {
            let number = rest.prefix { $0.isNumber || $0 == "." }
            guard !number.isEmpty, let value = Double(number) else { return nil }
            rest = rest.dropFirst(number.count)
            let unit = rest.prefix { !$0.isNumber && $0 != "." }
            // Longest unit first, so "ms" is not read as "m" followed by garbage.
            guard let factor = units.first(where: { $0.0 == unit })?.1 else { return nil }
            rest = rest.dropFirst(unit.count)
            total += value * factor
        }
        return total.isFinite && total < 1.8e19 ? UInt64(total) : nil
    }

    /// A short human form with a unit that fits: 212 µs, 84.2 ms, 4.1s, 2m05s.
    package static func format(_ nanos: UInt64) -> String {
        let n = Double(nanos)
        func fixed(_ v: Double, _ unit: String) -> String {
            let digits = v < 10 ? 2 : v < 100 ? 1 : 0
            return formatFixed(v, digits) + " " + unit
        }
        if nanos < 1_000 { return "\(nanos) ns" }
        if nanos < 1_000_000 { return fixed(n / 1e3, "µs") }
        if nanos < 1_000_000_000 { return fixed(n / 1e6, "ms") }
        if nanos < 60_000_000_000 { return formatFixed(n / 1e9, 1) + "s" }
        let s = nanos / 1_000_000_000
        if s < 3600 { return "\(s / 60)m" + pad2(s % 60) + "s" }
        return "\(s / 3600)h" + pad2((s % 3600) / 60) + "m"
    }

    static func pad2(_ v: UInt64) -> String { v < 10 ? "0\(v)" : "\(v)" }

    package static func formatFixed(_ value: Double, _ digits: Int) -> String {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let rounded = (value * scale).rounded() / scale
        var text = String(rounded)
        if let dot = text.firstIndex(of: ".") {
            let decimals = text.distance(from: text.index(after: dot), to: text.endIndex)
            if digits == 0 {
                text = String(text[..<dot])
            } else if decimals < digits {
                text += String(repeating: "0", count: digits - decimals)
            }
        }
        return text
    }
}

/// Sizes for output: 18.0 MiB.
package enum SizeText {
    package static func format(_ bytes: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var i = 0
        while value >= 1024 && i < units.count - 1 { value /= 1024; i += 1 }
        return i == 0 ? "\(bytes) B" : DurationText.formatFixed(value, 1) + " " + units[i]
    }
}

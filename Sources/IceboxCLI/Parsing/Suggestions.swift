/// "Did you mean …?" for mistyped commands, options and values: the candidates closest to
/// what was typed by Damerau–Levenshtein distance (optimal string alignment: insertions,
/// deletions, substitutions and swaps of two neighbours each cost 1), as git and cargo do.
enum Suggestions {
    /// The edit distance between two strings, counted in Unicode scalars, case-sensitively.
    static func distance(_ a: String, _ b: String) -> Int {
        let s = Array(a.unicodeScalars), t = Array(b.unicodeScalars)
        if s.isEmpty { return t.count }
        if t.isEmpty { return s.count }
        // Three rows suffice: the one being filled, the one above and the one above that (for swaps).
        var twoUp = [Int](repeating: 0, count: t.count + 1)
        var up = Array(0...t.count)
        var row = [Int](repeating: 0, count: t.count + 1)
        for i in 1...s.count {
            row[0] = i
            for j in 1...t.count {
                let cost = s[i - 1] == t[j - 1] ? 0 : 1
                var d = min(up[j] + 1, row[j - 1] + 1, up[j - 1] + cost)
                if i > 1 && j > 1 && s[i - 1] == t[j - 2] && s[i - 2] == t[j - 1] { d = min(d, twoUp[j - 2] + 1) }
                row[j] = d
            }
            (twoUp, up, row) = (up, row, twoUp)
        }
        return up[t.count]
    }

    /// The largest distance still worth suggesting for a word of this length: 1 for short
    /// words (so "xy" does not become "ps"), 2 from four characters on.
    static func threshold(for word: String) -> Int { word.unicodeScalars.count <= 3 ? 1 : 2 }

    /// The candidates closest to `typed` (all that tie for the best distance, at most three,
    /// in the order given), or a single candidate that `typed` is an unambiguous prefix of.
    /// Comparison ignores case, so "PS" suggests "ps".
    static func closest(to typed: String, among candidates: [String]) -> [String] {
        let word = typed.lowercased()
        guard !word.isEmpty else { return [] }
        let limit = threshold(for: word)
        var best = Int.max
        var hits: [String] = []
        for candidate in candidates where candidate != typed {
            let d = distance(word, candidate.lowercased())
            if d > limit || d > best { continue }
            if d < best { best = d; hits = [] }
            if !hits.contains(candidate) { hits.append(candidate) }
        }
        if hits.isEmpty && word.unicodeScalars.count >= 2 {
            let prefixed = candidates.filter { $0 != typed && $0.lowercased().hasPrefix(word) }
            if prefixed.count == 1 { return prefixed }
        }
        return Array(hits.prefix(3))
    }

    /// "; did you mean 'suspend'?", "; did you mean 'log' or 'logs'?", or "" when nothing is close.
    static func didYouMean(_ typed: String, among candidates: [String]) -> String {
        let hits = closest(to: typed, among: candidates).map { "'\($0)'" }
        switch hits.count {
        case 0: return ""
        case 1: return "; did you mean \(hits[0])?"
        default: return "; did you mean \(hits.dropLast().joined(separator: ", ")) or \(hits.last!)?"
        }
    }
}

import Glibc

/// Writing to the terminal. stdout carries results, stderr carries errors and event logs.
enum Output {
    static func out(_ line: String) { writeAll(1, line + "\n") }
    static func err(_ line: String) { writeAll(2, line + "\n") }

    /// Unbuffered, whole-line writes: output interleaves correctly with the daemon's and the
    /// app's on a shared terminal, and nothing is lost if icebox exits right after.
    static func writeAll(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; return }
            bytes = bytes.dropFirst(n)
        }
    }

    /// Columns padded to the widest cell; the last column is not padded.
    static func table(_ rows: [[String]]) -> [String] {
        guard let first = rows.first else { return [] }
        var widths = [Int](repeating: 0, count: first.count)
        for row in rows { for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.count) } }
        return rows.map { row in
            row.enumerated().map { i, cell in
                i == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[i] - cell.count)
            }.joined(separator: "  ").trimmingTrailingSpaces()
        }
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var s = self
        while s.last == " " { s.removeLast() }
        return s
    }
}

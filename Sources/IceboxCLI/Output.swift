import Glibc
import IceboxCore

/// Writing to the terminal. stdout carries results, stderr carries errors and event logs.
enum Output {
    /// Whether stdout and stderr get colour; decided once in IceboxMain.main (Terminal.colorEnabled).
    nonisolated(unsafe) static var colorOut = false  // written once in main before anything else runs; no thread exists yet
    nonisolated(unsafe) static var colorErr = false  // likewise

    static func out(_ line: String) { writeAll(1, line + "\n") }

    /// A line for stderr. An error line ("icebox: ...", ours or the daemon's) gets its
    /// prefix in red when stderr has colour.
    static func err(_ line: String) {
        if colorErr, line.hasPrefix("icebox: ") {
            writeAll(2, Style.error.paint("icebox:", colorErr) + line.dropFirst(7) + "\n")
        } else {
            writeAll(2, line + "\n")
        }
    }

    /// "icebox bench: warning: ...", with "warning:" in yellow when stderr has colour.
    static func warning(_ text: String, from prefix: String = "icebox") {
        writeAll(2, "\(prefix): " + Style.warning.paint("warning:", colorErr) + " \(text)\n")
    }

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

    /// Columns padded to the widest cell; the last column is not padded. `style` may colour
    /// a cell (row 0 is the first row given); the padding is computed on the plain text.
    static func table(_ rows: [[String]], style: ((_ row: Int, _ column: Int) -> Style?)? = nil, color: Bool = false) -> [String] {
        guard let first = rows.first else { return [] }
        // Each cell's width counted once, by bytes where it is ASCII (Characters otherwise):
        // counting Characters twice per cell, joining and trimming Character by Character
        // were a fifth of `ps`'s client time with 1000 apps.
        let cellWidths = rows.map { $0.map(displayWidth) }
        var widths = [Int](repeating: 0, count: first.count)
        for row in cellWidths { for (i, w) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], w) } }
        return rows.indices.map { r in
            let row = rows[r]
            var line = ""
            for (i, cell) in row.enumerated() {
                if i > 0 { line += "  " }
                line += (color ? style?(r, i) : nil).map { $0.paint(cell, true) } ?? cell
                if i < row.count - 1 {
                    line += String(repeating: " ", count: max(0, widths[min(i, widths.count - 1)] - cellWidths[r][i]))
                }
            }
            return line.trimmingTrailingSpaces()
        }
    }

    /// The columns a cell takes: its Characters (its bytes when they are all ASCII).
    static func displayWidth(_ cell: String) -> Int {
        let bytes = cell.utf8
        return bytes.allSatisfy({ $0 < 0x80 }) ? bytes.count : cell.count
    }
}

/// A count with its noun: "1 process", "3 processes", "1 thread", "0 threads".
enum Plural {
    static func count(_ n: Int, _ singular: String, _ plural: String? = nil) -> String {
        "\(n) " + (n == 1 ? singular : plural ?? singular + "s")
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var spaces = 0
        for byte in utf8.reversed() {
            guard byte == UInt8(ascii: " ") else { break }
            spaces += 1
        }
        return spaces == 0 ? self : String(decoding: utf8.dropLast(spaces), as: UTF8.self)
    }
}

import Glibc
import IceboxCore
import Synchronization

/// Writing to the terminal. stdout carries results, stderr carries errors and event logs.
enum Output {
    /// Whether stdout and stderr get colour; decided once in IceboxMain.main (Terminal.colorEnabled).
    nonisolated(unsafe) static var colorOut = false  // written once in main before anything else runs; no thread exists yet
    nonisolated(unsafe) static var colorErr = false  // likewise

    static func out(_ line: String) { writeLine(1, line) }

    /// A line for stderr. An error line ("icebox: ...", ours or the daemon's) gets its
    /// prefix in red when stderr has colour.
    static func err(_ line: String) {
        if colorErr, line.hasPrefix("icebox: ") {
            writeAll(2, Style.error.paint("icebox:", colorErr) + line.dropFirst(7) + "\n")
        } else {
            writeLine(2, line)
        }
    }

    /// `line` and a newline in one write, without a String of the two: see `keepAlive`.
    private static func writeLine(_ fd: Int32, _ line: String) {
        var bytes = Array(line.utf8)
        bytes.append(10)
        writeAll(fd, bytes)
        keepAlive(line)
    }

    /// Keeps the first few long lines written alive until the process exits: the first String
    /// of 64 bytes or more a process frees costs ~35 µs here (its storage has room for
    /// breadcrumbs, whose type the standard library resolves by mangled name on that first
    /// free; later frees ~3 µs), and a one-shot command exits right after it prints. Bounded:
    /// past `keptLines` (an attached run's events) lines are freed as usual, the cost paid once.
    private static func keepAlive(_ line: String) {
        guard line.utf8.count >= 64, keptCount.add(1, ordering: .relaxed).newValue <= keptLines else { return }
        _ = Unmanaged.passRetained(KeptLine(line))
    }

    private static let keptLines = 8
    private static let keptCount = Atomic<Int>(0)

    private final class KeptLine {
        let line: String
        init(_ line: String) { self.line = line }
    }

    /// "icebox: warning: ...", with "warning:" in yellow when stderr has colour.
    static func warning(_ text: String) {
        writeAll(2, "icebox: " + Style.warning.paint("warning:", colorErr) + " \(text)\n")
    }

    /// Unbuffered, whole-line writes: output interleaves correctly with the daemon's and the
    /// app's on a shared terminal, and nothing is lost if icebox exits right after.
    static func writeAll(_ fd: Int32, _ text: String) { writeAll(fd, Array(text.utf8)) }

    static func writeAll(_ fd: Int32, _ text: [UInt8]) {
        var bytes = text[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; return }
            bytes = bytes.dropFirst(n)
        }
    }

    /// Columns padded to the widest cell (not the last); `style` may colour a cell (row 0 is
    /// the first row given), padded by its plain text. One text, a line a row (no newline after
    /// the last, trailing spaces trimmed), for one write. Laid out in bytes: a String per line
    /// and a padding String per cell were an eighth of `ps`'s client time for 1000 apps.
    static func table(_ rows: [[String]], style: ((_ row: Int, _ column: Int) -> Style?)? = nil, color: Bool = false) -> String {
        guard let first = rows.first else { return "" }
        // Each cell's width counted once, by bytes where it is ASCII (Characters otherwise).
        let cellWidths = rows.map { $0.map(displayWidth) }
        var widths = [Int](repeating: 0, count: first.count)
        for row in cellWidths { for (i, w) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], w) } }
        var text: [UInt8] = []
        text.reserveCapacity(rows.count * (widths.reduce(2 * widths.count, +) + 1))
        for (r, row) in rows.enumerated() {
            if r > 0 { text.append(UInt8(ascii: "\n")) }  // a row that trims to nothing is still a line
            for (i, cell) in row.enumerated() {
                if i > 0 { text.append(contentsOf: [UInt8(ascii: " "), UInt8(ascii: " ")]) }
                if color, let paint = style?(r, i) {
                    text.append(contentsOf: paint.paint(cell, true).utf8)
                } else {
                    text.append(contentsOf: cell.utf8)
                }
                if i < row.count - 1 {
                    let pad = max(0, widths[min(i, widths.count - 1)] - cellWidths[r][i])
                    text.append(contentsOf: repeatElement(UInt8(ascii: " "), count: pad))
                }
            }
            while text.last == UInt8(ascii: " ") { text.removeLast() }
        }
        return String(decoding: text, as: UTF8.self)
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

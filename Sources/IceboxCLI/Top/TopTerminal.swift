import Glibc
import IceboxCore
import IceboxSystem

/// The terminal `icebox top` draws on: keys from stdin in raw mode, frames to stdout on the
/// alternate screen with the cursor hidden. Entering saves the terminal's settings; `leave`
/// restores them and the normal screen, and so does a crash (`TerminalMode`). The stop
/// signals never run a handler: the session takes them from a signalfd and leaves normally.
final class TopTerminal {
    static let enterSequence = Array("\u{1B}[?1049h\u{1B}[?25l\u{1B}[H\u{1B}[2J".utf8)
    /// Attributes off, cursor shown, back to the normal screen (what it showed before).
    static let leaveSequence = Array("\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l".utf8)

    let input: Int32 = 0
    let output: Int32 = 1
    private var entered = false
    private var lastFrame: [UInt8] = []  // so an unchanged frame is not written again

    /// Why `icebox top` cannot run on these descriptors and this TERM, or nil if it can.
    static func refusal(stdinIsTerminal: Bool, stdoutIsTerminal: Bool, term: String?) -> String? {
        if !stdoutIsTerminal { return "top draws a live screen, and stdout is not a terminal" }
        if !stdinIsTerminal { return "top reads keys from stdin, and stdin is not a terminal" }
        guard let term, !term.isEmpty, term != "dumb" else {
            return
                "top needs a terminal that can move the cursor, and TERM is \(term.map { $0.isEmpty ? "empty" : "'\($0)'" } ?? "not set")"
        }
        return nil
    }

    func enter() throws(IceboxError) {
        do { try TerminalMode.enterRaw(fd: input, leave: Self.leaveSequence) } catch { throw IceboxError("top", error) }
        entered = true
        Output.writeAll(output, Self.enterSequence)
    }

    /// Back to the terminal as it was; safe to call more than once.
    func leave() {
        guard entered else { return }
        entered = false
        TerminalMode.restore()
    }

    var size: (rows: Int, columns: Int) { TerminalMode.size(fd: output) ?? (24, 80) }  // if the terminal does not say

    /// Draws `lines` (each exactly the screen's width) from the top left, in one write:
    /// each line addressed by its row and overwritten, nothing cleared, so the screen never
    /// shows a blank frame. `force` writes even an unchanged frame (after a resize).
    func draw(_ lines: [String], force: Bool = false) {
        var frame: [UInt8] = []
        frame.reserveCapacity(lines.reduce(0) { $0 + $1.utf8.count + 10 })
        for (i, line) in lines.enumerated() {
            frame += Array("\u{1B}[\(i + 1);1H".utf8)
            frame += Array(line.utf8)
        }
        if !force && frame == lastFrame { return }
        lastFrame = frame
        Output.writeAll(output, frame)
    }

    /// Whatever the keyboard sent, up to 4 KiB; empty at end of file (the terminal hung up).
    func readInput() -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = retryingOnInterrupt { read(input, &buffer, buffer.count) }
        if n < 0 { return errno == EAGAIN ? [] : nil }
        return n == 0 ? nil : Array(buffer[0..<n])
    }
}

import Glibc
import IceboxCore

/// --color: whether to colour output.
enum ColorChoice: String, CaseIterable, Sendable {
    case auto, always, never
}

/// Colour and terminal facts, decided by pure functions so tests need no terminal.
enum Terminal {
    /// Whether a stream gets colour. `--color always` and `never` win (a per-invocation
    /// flag overrides the environment, as no-color.org asks); `auto` colours a terminal
    /// unless NO_COLOR is set to anything non-empty or TERM is "dumb".
    static func colorEnabled(choice: ColorChoice, noColor: String?, term: String?, isTerminal: Bool) -> Bool {
        switch choice {
        case .always: return true
        case .never: return false
        case .auto:
            if let noColor, !noColor.isEmpty { return false }
            if term == "dumb" { return false }
            return isTerminal
        }
    }

    /// The terminal's width in columns, or nil if the descriptor is not a terminal.
    static func columns(_ fd: Int32) -> Int? {
        var size = winsize()
        guard ioctl(fd, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }
}

/// An SGR colour or attribute, applied only when colour is on.
struct Style: Sendable, Equatable {
    let code: String

    static let green = Style(code: "32")
    static let cyan = Style(code: "36")
    static let yellow = Style(code: "33")
    static let red = Style(code: "31")
    static let blue = Style(code: "34")
    static let magenta = Style(code: "35")
    static let dim = Style(code: "2")
    static let bold = Style(code: "1")
    static let boldGreen = Style(code: "1;32")
    static let error = Style(code: "1;31")
    static let warning = Style(code: "1;33")

    func paint(_ text: String, _ enabled: Bool) -> String {
        enabled && !text.isEmpty ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }

    /// The colour of a lifecycle state: active green, suspended cyan, background yellow,
    /// launching blue, on disk magenta; an ended app dim, or red when it ended in failure (a
    /// non-zero exit status, or killed by a signal it did not ask for).
    static func of(_ state: AppState, exitStatus: Int32? = nil) -> Style {
        switch state {
        case .active: return .green
        case .suspended: return .cyan
        case .onDisk: return .magenta
        case .background: return .yellow
        case .launching: return .blue
        case .exited: return (exitStatus ?? 0) == 0 ? .dim : .red
        case .terminated, .evicted: return .dim
        }
    }
}

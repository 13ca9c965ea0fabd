import IceboxCore
import IceboxSystem

/// An event as a line of text: "08:09:23.123456  web          active → background        SIGUSR1 sent",
/// in local time, with the date in front when the event is not from today. With colour, the
/// state an app entered is coloured as in `icebox ps`, and errors are red.
enum EventText {
    static func line(
        _ event: Event, nowWallNanos: Int64 = Clock.wallNanos(), offset: (Int64) -> Int = TimeText.localOffset, color: Bool = false
    ) -> String {
        guard let wall = TimeText.parseTimestamp(event.time, offset: offset) else { return event.humanLine }
        let when = TimeText.civil(wallNanos: wall, offsetSeconds: offset(wall / 1_000_000_000))
        let today = TimeText.civil(wallNanos: nowWallNanos, offsetSeconds: offset(nowWallNanos / 1_000_000_000))
        let stamp = when.date == today.date ? when.clock : when.date + " " + when.clock
        var transition = event.kind.rawValue
        var painted = event.kind == .error ? Style.red.paint(transition, color) : transition
        if let to = event.to {
            let target = Style.of(to, exitStatus: event.exitStatus).paint(to.rawValue, color)
            if let from = event.from {
                transition = "\(from.rawValue) → \(to.rawValue)"
                painted = "\(from.rawValue) → \(target)"
            } else {
                transition = "→ \(to.rawValue)"
                painted = "→ \(target)"
            }
        }
        // The detail may quote what an app said or answered: escaped for the terminal.
        let app = TerminalText.escaped(event.app)
        return
            "\(stamp)  \(pad(app, 12)) \(painted)\(spaces(26 - transition.count)) \(TerminalText.escaped(event.detail, keepingTab: true))"
    }

    static func pad(_ s: String, _ width: Int) -> String { s + spaces(width - s.count) }
    static func spaces(_ n: Int) -> String { n > 0 ? String(repeating: " ", count: n) : "" }
}

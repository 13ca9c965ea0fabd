import Foundation
import Glibc
import IceboxCore
import Testing

/// An app's STATUS= (and anything else an app or its launcher supplies) reaches the reader's
/// terminal through `ps` and `log`: its escape sequences (window title, clear screen, cursor
/// moves, OSC 52 writing the clipboard), carriage returns and bells must arrive escaped.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct TerminalEscapeTests {
    /// What an app would send: set the title, clear the screen, move the cursor home and
    /// write over the table, put text on the clipboard (OSC 52), a C1 CSI, a bidi override,
    /// a carriage return to overwrite the line, DEL and the bell.
    static let hostile =
        "\u{1B}]0;pwned\u{07}\u{1B}[2J\u{1B}[H\u{1B}]52;c;cm0gLXJmIH4=\u{07}\u{9B}31m\u{202E}txt.exe\rFAKE\u{7F}\u{08}ok"

    /// The scalars a terminal would act on: C0 controls but the newlines (and tabs, where
    /// the format has them) of the layout, DEL, C1 controls, ESC in any form.
    static func controls(_ text: String, allowTabs: Bool = false) -> [String] {
        text.unicodeScalars.filter { s in
            let v = s.value
            if v == 0x0A || (allowTabs && v == 0x09) { return false }
            return v < 0x20 || v == 0x7F || (0x80...0x9F).contains(v) || (0x202A...0x202E).contains(v)
        }.map { "U+" + String($0.value, radix: 16) }
    }

    @Test("an app's STATUS= with escape sequences, CR, BEL, C1 and a bidi override reaches ps and log escaped")
    func hostileStatus() throws {
        let box = Sandbox()
        defer { box.close() }
        let app = box.dir + "/hostile.py"
        try """
        import os, socket, sys, time
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.sendto(('READY=1\\nSTATUS=' + sys.argv[1]).encode(), os.environ['NOTIFY_SOCKET'])
        while True:
            time.sleep(1)
        """.write(toFile: app, atomically: true, encoding: .utf8)
        // The argument reaches the spawn event's detail (the command line) too.
        let r = try box.icebox(["launch", "--ready", "notify", "evil", "--", "python3", app, Self.hostile])
        #expect(r.status == 0, "\(r.output)")
        #expect(Self.controls(r.output).isEmpty, "launch printed \(Self.controls(r.output))")

        // The record holds STATUS= exactly, and JSON carries it exactly (its own escapes).
        let json = try box.icebox(["ps", "--json"])
        #expect(json.status == 0)
        // JSON escapes the C0 controls (ESC, CR, BEL, BS); DEL, C1 and others stay as they are.
        #expect(!json.stdout.unicodeScalars.contains { $0.value < 0x20 && $0.value != 0x0A }, "ps --json: \(json.stdout)")
        #expect(try box.apps()["evil"]?.statusText == Self.hostile)

        let table = try box.icebox(["ps"])
        #expect(table.status == 0)
        #expect(Self.controls(table.stdout).isEmpty, "ps printed \(Self.controls(table.stdout))")
        #expect(
            table.stdout.contains(
                "\\x1B]0;pwned\\x07\\x1B[2J\\x1B[H\\x1B]52;c;cm0gLXJmIH4=\\x07\\u009B31m\\u202Etxt.exe\\x0DFAKE\\x7F\\x08ok"),
            "\(table.stdout)")
        #expect(table.stdout.split(separator: "\n").count == 2, "a header and one row: \(table.stdout)")

        let format = try box.icebox(["ps", "--format", "{{.Name}}\\t{{.Status}}\\t{{.Command}}"])
        #expect(format.status == 0)
        #expect(Self.controls(format.stdout, allowTabs: true).isEmpty, "ps --format printed \(Self.controls(format.stdout))")
        #expect(format.stdout.hasPrefix("evil\t\\x1B]0;pwned"), "\(format.stdout)")

        let log = try box.icebox(["log", "evil"])
        #expect(log.status == 0)
        #expect(log.stdout.contains("python3 \(app) \\x1B]0;pwned\\x07"), "\(log.stdout)")
        #expect(Self.controls(log.stdout).isEmpty, "log printed \(Self.controls(log.stdout))")
        let logJSON = try box.icebox(["log", "--json", "evil"])
        #expect(logJSON.stdout.contains("\\u001b]0;pwned\\u0007"), "log --json stays exact: \(logJSON.stdout)")
    }

    @Test(
        "icebox logs escapes an app's output on a terminal (a pty) and copies it exactly to a pipe",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs script (util-linux) for a pty"))
    func logsOnATerminal() throws {
        let box = Sandbox()
        defer { box.close() }
        let r = try box.icebox(["launch", "loud", "--", "printf", "%s\\tok\\n", Self.hostile])
        #expect(r.status == 0, "\(r.output)")
        // launch returns at the exec; printf's line reaches the log when it has run.
        var piped = try box.icebox(["logs", "loud"])
        _ = Scenario.eventually(seconds: 10) {
            piped = (try? box.icebox(["logs", "loud"])) ?? piped
            return !piped.stdout.isEmpty
        }
        #expect(piped.stdout == Self.hostile + "\tok\n", "piped: exact")

        // The same command with a pty as its standard output.
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        p.arguments = ["-qec", "'\(Sandbox.binary)' logs loud", "/dev/null"]
        p.environment = box.environment
        let shown = try Sandbox.runToEnd(p, timeout: 20, what: "script")
        #expect(shown.status == 0, "\(shown.output)")
        // The pty turns \n into \r\n: those are the terminal's own.
        let text = shown.stdout.replacingOccurrences(of: "\r\n", with: "\n")
        #expect(text.contains("\\x1B]0;pwned\\x07"), "\(text)")
        #expect(text.contains("\tok"), "a tab of the output stays")
        #expect(Self.controls(text, allowTabs: true).isEmpty, "logs on a terminal printed \(Self.controls(text))")
    }
}

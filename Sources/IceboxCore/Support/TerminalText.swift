/// Text that others supplied (an app's STATUS=, an event's detail quoting what an app said or
/// answered, a command line), made safe to print on a terminal, as `systemctl status` does: nothing
/// in it can move the cursor, clear the screen, set the window title, write the clipboard (OSC 52),
/// ring the bell or reorder what follows it.
///
/// Escaped as `\xNN` (upper-case hex): every C0 control (ESC, CR, BS, BEL, …; tab and newline too,
/// unless kept, since one cell of a table must stay one cell) and DEL. As `\uNNNN`: the C1 controls
/// (which some terminals take as CSI and OSC), the bidirectional formatting characters (which
/// reorder the text around them) and the line and paragraph separators (`needsUnicodeEscape`).
/// Everything else is left as it is, a backslash too: the escapes mark what was not printable,
/// they are not meant to be decoded. JSON output (`-j`, `{{json .}}`) does not go through here: it
/// is exact, its own escapes cover the C0 controls.
package enum TerminalText {
    /// `text` with the characters above escaped; `keepingLayout`: tab and newline stay (a whole
    /// reply line or message whose layout they are); `keepingTab`: tab stays (the last field of a
    /// line, as an event's detail, where it moves nothing that follows, while a newline would start
    /// what looks like another event).
    package static func escaped(_ text: String, keepingLayout: Bool = false, keepingTab: Bool = false) -> String {
        // Nothing to escape (nearly every line, "→" and "µs" included): the same String back after
        // one pass over its bytes, where the scalar walk below would build a new one.
        if !needsEscaping(text.utf8, keepingTab: keepingLayout || keepingTab, keepingNewline: keepingLayout) { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            let v = scalar.value
            if (keepingLayout || keepingTab) && v == 0x09 || keepingLayout && v == 0x0A {
                out.unicodeScalars.append(scalar)
            } else if v < 0x20 || v == 0x7F {
                out += "\\x" + hex(v, digits: 2)
            } else if needsUnicodeEscape(v) {
                out += "\\u" + hex(v, digits: 4)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Whether `bytes` (UTF-8) hold anything `escaped` would change: a C0 control (but for those
    /// kept), DEL, or the UTF-8 form of a code point `needsUnicodeEscape` names.
    static func needsEscaping(_ bytes: String.UTF8View, keepingTab: Bool, keepingNewline: Bool) -> Bool {
        var previous: UInt8 = 0, beforePrevious: UInt8 = 0
        for b in bytes {
            if b < 0x20 {
                if !(b == 0x09 && keepingTab) && !(b == 0x0A && keepingNewline) { return true }
            } else if b == 0x7F {
                return true
            } else if previous == 0xC2 && (0x80...0x9F).contains(b) {
                return true
            } else if previous == 0xD8 && b == 0x9C {
                return true
            } else if beforePrevious == 0xE2 && previous == 0x80 && (b == 0x8E || b == 0x8F || (0xA8...0xAE).contains(b)) {
                return true
            } else if beforePrevious == 0xE2 && previous == 0x81 && (0xA6...0xA9).contains(b) {
                return true
            }
            beforePrevious = previous
            previous = b
        }
        return false
    }

    /// C1 controls, bidirectional formatting characters, line and paragraph separators.
    static func needsUnicodeEscape(_ v: UInt32) -> Bool {
        switch v {
        case 0x80...0x9F, 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069, 0x2028, 0x2029: return true
        default: return false
        }
    }

    private static func hex(_ v: UInt32, digits: Int) -> String {
        let text = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}

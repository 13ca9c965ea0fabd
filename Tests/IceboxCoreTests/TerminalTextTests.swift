import Testing

@testable import IceboxCore

/// What an app supplies (STATUS=, an answer a probe quotes) is printed with every control
/// character escaped: nothing of it can act on the reader's terminal.
@Suite("TerminalText")
struct TerminalTextTests {
    @Test func printableTextIsUnchanged() {
        for text in ["", "serving", "a\\x1Bb (a backslash stays)", "café ünïcode 日本 🧊", "tabs\u{A0}nbsp"] {
            #expect(TerminalText.escaped(text) == text)
        }
    }

    @Test func c0ControlsAndDelAreHexEscaped() {
        #expect(TerminalText.escaped("\u{1B}]0;pwned\u{07}") == "\\x1B]0;pwned\\x07")
        #expect(TerminalText.escaped("\u{1B}[2J\u{1B}[H") == "\\x1B[2J\\x1B[H")
        #expect(TerminalText.escaped("ok\rFAKE") == "ok\\x0DFAKE")
        #expect(TerminalText.escaped("a\u{0}b\u{8}c\u{7F}") == "a\\x00b\\x08c\\x7F")
        #expect(TerminalText.escaped("one\ntwo\tthree") == "one\\x0Atwo\\x09three")
        #expect(TerminalText.escaped("one\ntwo\tthree\u{1B}", keepingLayout: true) == "one\ntwo\tthree\\x1B")
        // The byte scan and the scalar walk agree on every character they look at.
        for scalar in (0...0x3000).compactMap(Unicode.Scalar.init) {
            let text = "a → \(Character(scalar)) µs"
            let v = scalar.value
            #expect(
                TerminalText.needsEscaping(text.utf8, keepingTab: false, keepingNewline: false)
                    == (v < 0x20 || v == 0x7F || TerminalText.needsUnicodeEscape(v)), "U+\(String(v, radix: 16))")
        }
        #expect(
            TerminalText.escaped("one\ntwo\tthree", keepingTab: true) == "one\\x0Atwo\tthree",
            "a tab at the end of a line stays; a newline never")
    }

    @Test func osc52ClipboardWriteIsDefused() {
        let attack = "\u{1B}]52;c;ZWNobyBwd25lZA==\u{07}"
        let shown = TerminalText.escaped(attack)
        #expect(shown == "\\x1B]52;c;ZWNobyBwd25lZA==\\x07")
        #expect(!shown.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F })
    }

    @Test func c1ControlsBidiAndSeparatorsAreUnicodeEscaped() {
        #expect(TerminalText.escaped("a\u{9B}2Jb\u{9D}0;t\u{9C}") == "a\\u009B2Jb\\u009D0;t\\u009C")
        #expect(TerminalText.escaped("\u{80}\u{85}\u{9F}") == "\\u0080\\u0085\\u009F")
        #expect(TerminalText.escaped("abc\u{202E}gnp.exe") == "abc\\u202Egnp.exe")
        #expect(TerminalText.escaped("\u{2066}x\u{2069}\u{200F}\u{61C}") == "\\u2066x\\u2069\\u200F\\u061C")
        #expect(TerminalText.escaped("a\u{2028}b\u{2029}") == "a\\u2028b\\u2029")
        #expect(TerminalText.escaped("\u{A0}\u{2030}") == "\u{A0}\u{2030}", "neighbours of the ranges stay")
    }

    @Test func everyScalarBelowA0EscapesToPrintableASCII() {
        for v in UInt32(0)..<0xA0 {
            let scalar = Unicode.Scalar(v)!
            let shown = TerminalText.escaped(String(Character(scalar)))
            if v >= 0x20 && v < 0x7F {
                #expect(shown == String(Character(scalar)))
            } else {
                #expect(shown.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }, "U+\(String(v, radix: 16)) → \(shown)")
            }
        }
    }
}

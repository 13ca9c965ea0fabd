/// A key of `icebox top`, decoded from what the terminal sends.
enum TopKey: Equatable {
    case up, down, home, end, pageUp, pageDown
    case enter, escape, backspace
    case interrupt  // Ctrl-C: in raw mode a byte, not SIGINT
    case char(Character)
}

/// What a key asks of the session, beyond the model's change.
enum TopEffect: Equatable {
    case send(TopAction, String)
    case quit
}

/// The keys of `icebox top`: bytes → keys, and a pure reducer (model, key → model, effects),
/// tested without a terminal.
enum TopKeys {
    /// The keys in `bytes`, and the bytes left over (the start of an escape sequence cut by a
    /// read: kept for the next read). A lone ESC at the end is Escape: a terminal sends a
    /// sequence in one write, so a read ending in ESC alone is the Escape key.
    static func decode(_ bytes: [UInt8]) -> (keys: [TopKey], rest: [UInt8]) {
        var keys: [TopKey] = []
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            switch b {
            case 0x1B:
                // ESC alone, or before anything but CSI or SS3: the Escape key.
                guard i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "[") || bytes[i + 1] == UInt8(ascii: "O") else {
                    keys.append(.escape)
                    i += 1
                    continue
                }
                // CSI or SS3: parameters, then a final byte in 0x40...0x7E.
                var j = i + 2
                while j < bytes.count, !(0x40...0x7E).contains(bytes[j]) { j += 1 }
                guard j < bytes.count else { return (keys, Array(bytes[i...])) }
                let params = String(decoding: bytes[(i + 2)..<j], as: UTF8.self)
                switch bytes[j] {
                case UInt8(ascii: "A"): keys.append(.up)
                case UInt8(ascii: "B"): keys.append(.down)
                case UInt8(ascii: "H"): keys.append(.home)
                case UInt8(ascii: "F"): keys.append(.end)
                case UInt8(ascii: "~"):
                    switch params {
                    case "1", "7": keys.append(.home)
                    case "4", "8": keys.append(.end)
                    case "5": keys.append(.pageUp)
                    case "6": keys.append(.pageDown)
                    default: break
                    }
                default: break  // other keys (left, right, F-keys): nothing to do
                }
                i = j + 1
            case 0x0D, 0x0A: keys.append(.enter); i += 1
            case 0x7F, 0x08: keys.append(.backspace); i += 1
            case 0x03: keys.append(.interrupt); i += 1
            case 0x20...0x7E:
                keys.append(.char(Character(Unicode.Scalar(b))))
                i += 1
            default:
                // UTF-8 beyond ASCII (a filter may hold it): the whole character, once complete.
                let length = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1
                if length == 1 {
                    i += 1  // another control byte, or a stray continuation byte: ignored
                    continue
                }
                guard i + length <= bytes.count else { return (keys, Array(bytes[i...])) }
                let text = String(decoding: bytes[i..<(i + length)], as: UTF8.self)
                if let c = text.first, text.unicodeScalars.allSatisfy({ $0.value >= 0xA0 }) { keys.append(.char(c)) }
                i += length
            }
        }
        return (keys, [])
    }

    /// The model after `key`, and what the session must do. `page`: rows a page moves.
    static func reduce(_ model: inout TopModel, _ key: TopKey, page: Int = 10) -> [TopEffect] {
        switch model.prompt {
        case .confirm(let action, let name):
            model.prompt = .none
            if key == .char("y") || key == .char("Y") {
                model.pending += 1
                model.report("\(action.rawValue) \(name)…", error: false)
                return [.send(action, name)]
            }
            if key == .interrupt { return [.quit] }
            model.report("\(action.rawValue) \(name): not done", error: false)
            return []
        case .filter(let text):
            switch key {
            case .enter:
                model.filter = text
                model.prompt = .none
            case .escape:
                model.filter = ""
                model.prompt = .none
            case .backspace: model.prompt = .filter(String(text.dropLast()))
            case .char(let c): if text.count < 64 { model.prompt = .filter(text + String(c)) }
            case .interrupt: return [.quit]
            default: break
            }
            return []
        case .help:
            model.prompt = .none
            if key == .escape || key == .char("?") { return [] }
        case .none:
            break
        }
        let shown = model.visibleRows
        let index = shown.firstIndex { $0.name == model.selected } ?? 0
        func select(_ i: Int) {
            guard !shown.isEmpty else { return }
            model.selected = shown[max(0, min(shown.count - 1, i))].name
        }
        switch key {
        case .up, .char("k"): select(index - 1)
        case .down, .char("j"): select(index + 1)
        case .home, .char("g"): select(0)
        case .end, .char("G"): select(shown.count - 1)
        case .pageUp: select(index - page)
        case .pageDown: select(index + page)
        case .char("q"), .interrupt: return [.quit]
        case .char("?"): model.prompt = .help
        case .char("/"): model.prompt = .filter(model.filter)
        case .escape:
            model.message = nil
            model.filter = ""
        case .char("<"):
            sortBy(&model, TopColumn(rawValue: (model.sort.rawValue + TopColumn.allCases.count - 1) % TopColumn.allCases.count)!)
        case .char(">"): sortBy(&model, TopColumn(rawValue: (model.sort.rawValue + 1) % TopColumn.allCases.count)!)
        case .char("i"): model.descending.toggle()
        case .char(let c) where c.isASCII && c.isNumber:
            // 1…9: sort by that column; the same number again reverses the order.
            guard let n = c.wholeNumberValue, let column = TopColumn(rawValue: n - 1) else { return [] }
            if column == model.sort { model.descending.toggle() } else { sortBy(&model, column) }
        case .char(let c):
            guard let action = actions[c] else { return [] }  // any other key does nothing
            guard let row = shown.isEmpty ? nil : shown[min(index, shown.count - 1)] else {
                model.report("no app selected", error: true)
                return []
            }
            model.selected = row.name
            if action == .terminate || action == .evict {
                model.prompt = .confirm(action, row.name)
                return []
            }
            model.pending += 1
            model.report("\(action.rawValue) \(row.name)…", error: false)
            return [.send(action, row.name)]
        default: break
        }
        return []
    }

    static let actions: [Character: TopAction] = ["s": .suspend, "r": .resume, "w": .switchTo, "t": .terminate, "e": .evict]

    private static func sortBy(_ model: inout TopModel, _ column: TopColumn) {
        model.sort = column
        model.descending = false
    }

    static let help =
        "↑↓/jk select  s suspend  r resume  w switch to  t terminate  e evict  / filter (Enter applies, Esc clears)  "
        + "1-9 or </> sort (again: reverse, i reverse)  Esc clear  q quit"

    /// Shown when nothing else is.
    static let hint = "s suspend  r resume  w switch  t terminate  e evict  / filter  </> sort  ? help  q quit"
}

import IceboxCore

/// Draws `icebox top`, a pure function: model and size → exactly `height` lines of exactly
/// `width` columns (padded, so a frame overwrites the last without clearing the screen).
/// Text not icebox's own (app names, STATUS=, event details) is escaped (`TerminalText`), so
/// a hostile app cannot move the cursor; without colour the lines hold no escape sequence.
enum TopRender {
    /// A piece of a line with its style (nil: the line's).
    struct Span {
        var text: String
        var style: Style?
        init(_ text: String, _ style: Style? = nil) { (self.text, self.style) = (text, style) }
    }

    /// The columns each field takes (the name's and the status's depend on the screen).
    static let fixedWidths: [TopColumn: Int] = [
        .state: 10, .since: 7, .memory: 12, .lastFreeze: 9, .lastThaw: 9, .backend: 9, .priority: 10,
    ]

    /// A memory change smaller than this (or than 1% of the figure) shows no trend: the v1
    /// memory cgroup's usage moves by a few hundred KiB with per-CPU charge batching.
    static let trendThreshold: Int64 = 256 * 1024

    static func lines(_ model: TopModel, width: Int, height: Int, color: Bool, now: UInt64) -> [String] {
        guard width > 0, height > 0 else { return [] }
        let shown = model.visibleRows
        var out: [[Span]] = [headerLine(model), policyLine(model)]
        // The events take a third of what is left below the table's title, at most 8, none on a tiny screen.
        let eventLines = height >= 14 ? min(8, (height - 4) / 3) : 0
        let tableRows = max(0, height - out.count - 1 - (eventLines > 0 ? eventLines + 1 : 0) - 1)
        let nameWidth = max(4, min(24, shown.map { columns(TerminalText.escaped($0.name)) }.max() ?? 4))
        out.append(titleLine(model, nameWidth: nameWidth))
        let selectedName = model.selectedRow?.name
        let selectedIndex = shown.firstIndex { $0.name == selectedName } ?? 0
        let first = tableRows == 0 ? 0 : max(0, selectedIndex - tableRows + 1)
        var rowLines: [Int: Bool] = [:]  // out index → selected
        for row in shown.dropFirst(first).prefix(tableRows) {
            rowLines[out.count] = row.name == selectedName
            out.append(rowSpans(row, selected: row.name == selectedName, nameWidth: nameWidth, now: now))
        }
        if shown.isEmpty && tableRows > 0 {
            out.append([
                Span(model.rows.isEmpty ? "  no apps running" : "  no app matches the filter '\(TerminalText.escaped(model.filter))'", .dim)
            ])
        }
        while out.count < height - 1 - (eventLines > 0 ? eventLines + 1 : 0) { out.append([]) }
        if eventLines > 0 {
            let more = shown.count > first + tableRows ? "  (\(shown.count - first - tableRows) more rows below)" : ""
            out.append([Span("── latest events " + more, .dim)])
            let latest = model.events.suffix(eventLines)
            for line in latest { out.append([Span(line)]) }
            for _ in latest.count..<eventLines { out.append([]) }
        }
        out.append(bottomLine(model))
        return out.prefix(height).enumerated().map { i, spans in
            let lineStyle: Style? = rowLines[i] == true ? Style(code: "7") : (i == 2 ? Style.bold : nil)
            return fit(spans, width: width, color: color, lineStyle: lineStyle)
        }
    }

    static func headerLine(_ model: TopModel) -> [Span] {
        let counts = Dictionary(model.rows.map { ($0.state, 1) }, uniquingKeysWith: +)
        let states = AppState.allCases.compactMap { s in counts[s].map { "\($0) \(s.rawValue)" } }
        var text = "icebox top  " + Plural.count(model.rows.count, "app")
        if !states.isEmpty { text += ": " + states.joined(separator: ", ") }
        let total = model.rows.compactMap(\.memoryBytes).reduce(0, &+)
        var memory = "   memory \(SizeText.format(total))"
        if let budget = model.policy?.memoryBudgetBytes { memory += " of \(SizeText.format(budget)) budget" }
        return [Span(text, .bold), Span(memory)]
    }

    static func policyLine(_ model: TopModel) -> [Span] {
        var parts = ["pressure " + (model.pressure ?? "unknown")]
        if let policy = model.policy {
            parts.append("trigger " + (policy.pressure ?? "none"))
            parts.append("max suspended " + (policy.maxSuspended.map(String.init) ?? "none"))
            parts.append("protect active " + (policy.protectActive ? "yes" : "no"))
            if let after = policy.compactAfterNanos { parts.append("compact after \(DurationText.format(after))") }
        } else {
            parts.append("policy unknown")
        }
        return [Span(parts.joined(separator: "   "))]
    }

    static func titleLine(_ model: TopModel, nameWidth: Int) -> [Span] {
        var cells: [String] = ["  "]
        for column in TopColumn.allCases {
            let mark = column == model.sort ? (model.descending ? "▼" : "▲") : ""
            let title = "\(column.rawValue + 1)" + column.title + mark
            cells.append(column == .status ? title : cell(title, width(of: column, nameWidth: nameWidth)))
        }
        return [Span(cells.joined())]
    }

    static func width(of column: TopColumn, nameWidth: Int) -> Int {
        column == .name ? max(nameWidth, 7) + 2 : (fixedWidths[column] ?? 8) + 1
    }

    static func rowSpans(_ row: TopModel.Row, selected: Bool, nameWidth: Int, now: UInt64) -> [Span] {
        func w(_ c: TopColumn) -> Int { width(of: c, nameWidth: nameWidth) }
        var memory = row.memoryBytes.map(SizeText.format) ?? "–"
        if let bytes = row.memoryBytes {
            let threshold = max(trendThreshold, Int64(bytes / 100))
            memory += row.memoryDelta > threshold ? " ↑" : row.memoryDelta < -threshold ? " ↓" : "  "
        }
        let age = TimeText.age(now.saturatingSub(row.sinceMonotonicNanos))
        return [
            // The selection is marked without colour too (NO_COLOR, a capture of the screen).
            Span(selected ? "> " : "  "),
            Span(cell(TerminalText.escaped(row.name), w(.name))),
            Span(cell(row.state.rawValue, w(.state)), Style.of(row.state)),
            Span(cell(age, w(.since))),
            Span(cell(memory, w(.memory))),
            Span(cell(row.lastFreezeNanos.map(DurationText.format) ?? "–", w(.lastFreeze))),
            Span(cell(row.lastThawNanos.map(DurationText.format) ?? "–", w(.lastThaw))),
            Span(cell(row.backend.rawValue, w(.backend))),
            Span(cell(row.priority.rawValue, w(.priority))),
            // The app's own text: escaped, never a control sequence.
            Span(TerminalText.escaped(row.status)),
        ]
    }

    static func bottomLine(_ model: TopModel) -> [Span] {
        switch model.prompt {
        case .confirm(let action, let name): return [Span("\(action.rawValue) \(TerminalText.escaped(name))? (y/n)", .warning)]
        case .filter(let text): return [Span("filter: " + TerminalText.escaped(text) + "▏  (Enter applies, Esc clears)", .bold)]
        case .help: return [Span(TopKeys.help)]
        case .none: break
        }
        let filter = model.filter.isEmpty ? [] : [Span("[filter: \(TerminalText.escaped(model.filter))] ", .yellow)]
        guard let message = model.message else { return filter + [Span(TopKeys.hint, .dim)] }
        return filter + [Span(TerminalText.escaped(message), model.messageIsError ? .error : nil)]
    }

    /// `text` in a column of `width` (its last space the gap to the next): cut with "…" if longer.
    static func cell(_ text: String, _ width: Int) -> String {
        let count = columns(text)
        if count > width - 1 { return cut(text, to: width - 1) + " " }
        return text + String(repeating: " ", count: width - count)
    }

    /// The spans cut to `width` columns and padded to it, painted when `color` is on.
    static func fit(_ spans: [Span], width: Int, color: Bool, lineStyle: Style?) -> String {
        var out = ""
        var left = width
        for span in spans where left > 0 {
            // Counted once for a span that fits (every span, most frames); again only when cut.
            var text = span.text
            var count = columns(text)
            if count > left {
                text = cut(text, to: left)
                count = columns(text)
            }
            left -= count
            out += paint(text, span.style, lineStyle, color)
        }
        out += paint(String(repeating: " ", count: left), nil, lineStyle, color)
        return out
    }

    /// `text` cut to at most `width` columns, ending in "…" when something was cut.
    static func cut(_ text: String, to width: Int) -> String {
        guard columns(text) > width else { return text }
        guard width > 0 else { return "" }
        var out = "", used = 0
        for c in text {
            let w = columns(c)
            if used + w > width - 1 { break }
            out.append(c)
            used += w
        }
        return out + "…" + String(repeating: " ", count: max(0, width - 1 - used))
    }

    /// The columns `text` takes on a terminal: an ASCII byte one, a character of the wide
    /// East Asian ranges or an emoji two, any other character (with its combining marks) one.
    /// A line wider than the screen would wrap, and the bottom line would scroll the screen:
    /// an app's STATUS= in CJK must not do that.
    static func columns(_ text: String) -> Int {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return text.utf8.count }
        return text.reduce(0) { $0 + columns($1) }
    }

    static func columns(_ c: Character) -> Int {
        guard let v = c.unicodeScalars.first?.value, v >= 0x1100 else { return 1 }
        let wide: [ClosedRange<UInt32>] = [
            0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
            0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x1F300...0x1F64F,
            0x1F900...0x1F9FF, 0x20000...0x3FFFD,
        ]
        return wide.contains { $0.contains(v) } ? 2 : 1
    }

    private static func paint(_ text: String, _ style: Style?, _ lineStyle: Style?, _ color: Bool) -> String {
        let code = [lineStyle?.code, style?.code].compactMap { $0 }.joined(separator: ";")
        return code.isEmpty ? text : Style(code: code).paint(text, color)
    }
}

import IceboxCore
import Testing

@testable import IceboxCLI

/// `icebox top` without a terminal: the renderer (model + size → lines) and the key reducer
/// (model + key → model + effects) are pure.
@Suite struct TopViewTests {
    static let second: UInt64 = 1_000_000_000

    static func model(_ rows: [TopModel.Row]) -> TopModel {
        var m = TopModel()
        m.rows = rows
        m.selected = m.visibleRows.first?.name
        return m
    }

    static let three = model([
        .init(name: "web", pid: 10, state: .active, sinceMonotonicNanos: 5 * second, memoryBytes: 30 << 20, status: "serving"),
        .init(name: "db", pid: 11, state: .suspended, sinceMonotonicNanos: 1 * second, memoryBytes: 200 << 20),
        .init(name: "cache", pid: 12, state: .background, sinceMonotonicNanos: 8 * second, priority: .low, memoryBytes: 5 << 20),
    ])

    /// The text a terminal shows: SGR sequences removed.
    static func plain(_ line: String) -> String {
        var out = "", inEscape = false
        for c in line {
            if c == "\u{1B}" {
                inEscape = true
            } else if inEscape {
                if c == "m" { inEscape = false }
            } else {
                out.append(c)
            }
        }
        return out
    }

    static func rowLine(_ lines: [String], _ name: String) -> String? {
        lines.map(plain).first { $0.dropFirst(2).hasPrefix(name + " ") }
    }

    @Test("every line is exactly the screen's width and there are exactly its height", arguments: [(80, 24), (120, 40), (40, 10), (20, 5)])
    func sizes(width: Int, height: Int) {
        let lines = TopRender.lines(Self.three, width: width, height: height, color: true, now: 10 * Self.second)
        #expect(lines.count == height)
        for line in lines { #expect(TopRender.columns(Self.plain(line)) == width, "\(Self.plain(line))") }
    }

    @Test("a row shows name, state, time in state, memory, backend, priority and status; long text is cut to the width")
    func rowContent() {
        let lines = TopRender.lines(Self.three, width: 120, height: 20, color: false, now: 10 * Self.second)
        let web = Self.rowLine(lines, "web")
        #expect(web?.contains("active") == true)
        #expect(web?.contains("5.0s") == true)
        #expect(web?.contains("30.0 MiB") == true)
        #expect(web?.contains("cgroup2") == true)
        #expect(web?.contains("normal") == true)
        #expect(web?.contains("serving") == true)
        var long = Self.three
        long.rows[0].status = String(repeating: "x", count: 300)
        let narrow = TopRender.lines(long, width: 100, height: 20, color: false, now: 10 * Self.second)
        let cut = Self.rowLine(narrow, "web")
        #expect(cut?.count == 100)
        #expect(cut?.hasSuffix("…") == true)
    }

    @Test("wide characters in a STATUS= count two columns: the line still fits the screen")
    func wideCharacters() {
        var m = Self.three
        m.rows[0].status = String(repeating: "漢字", count: 100)
        m.message = String(repeating: "😀", count: 100)
        for width in [80, 81] {
            let lines = TopRender.lines(m, width: width, height: 20, color: false, now: 0)
            for line in lines { #expect(TopRender.columns(line) == width, "\(line)") }
        }
    }

    @Test("the header counts apps per state and shows the budget and pressure")
    func header() {
        var m = Self.three
        var policy = EvictionPolicy()
        policy.memoryBudgetBytes = 1 << 30
        m.policy = policy
        m.pressure = "some 0.12% full 0.00% (10 s)"
        let lines = TopRender.lines(m, width: 160, height: 20, color: false, now: 0).map(Self.plain)
        #expect(lines[0].contains("3 apps: 1 active, 1 background, 1 suspended"), "\(lines[0])")
        #expect(lines[0].contains("of 1.0 GiB budget"))
        #expect(lines[1].contains("pressure some 0.12% full 0.00%"))
    }

    @Test("sorted by name by default, by memory with 4, reversed by pressing 4 again; the title marks the sort")
    func sorting() {
        var m = Self.three
        func order() -> [String] { m.visibleRows.map(\.name) }
        #expect(order() == ["cache", "db", "web"])
        _ = TopKeys.reduce(&m, .char("4"))
        #expect(m.sort == .memory)
        #expect(order() == ["cache", "web", "db"])
        let title = Self.plain(TopRender.lines(m, width: 120, height: 20, color: false, now: 0)[2])
        #expect(title.contains("MEMORY▲"), "\(title)")
        _ = TopKeys.reduce(&m, .char("4"))
        #expect(order() == ["db", "web", "cache"])
        #expect(Self.plain(TopRender.lines(m, width: 120, height: 20, color: false, now: 0)[2]).contains("MEMORY▼"))
        _ = TopKeys.reduce(&m, .char(">"))
        #expect(m.sort == .lastFreeze && !m.descending)
        _ = TopKeys.reduce(&m, .char("<"))
        _ = TopKeys.reduce(&m, .char("<"))
        #expect(m.sort == .since)
        #expect(order() == ["cache", "web", "db"])  // shortest time in state first (the latest start)
    }

    @Test("/ types a filter, Enter applies it, Esc clears it")
    func filtering() {
        var m = Self.three
        _ = TopKeys.reduce(&m, .char("/"))
        for c in "WE" { _ = TopKeys.reduce(&m, .char(c)) }
        #expect(m.prompt == .filter("WE"))
        #expect(m.visibleRows.count == 3)  // not applied while typing
        _ = TopKeys.reduce(&m, .enter)
        #expect(m.visibleRows.map(\.name) == ["web"])
        #expect(m.selectedRow?.name == "web")
        let lines = TopRender.lines(m, width: 100, height: 20, color: false, now: 0).map(Self.plain)
        #expect(lines.last?.contains("[filter: WE]") == true)
        #expect(Self.rowLine(lines, "db") == nil)
        _ = TopKeys.reduce(&m, .char("/"))
        _ = TopKeys.reduce(&m, .escape)
        #expect(m.filter.isEmpty && m.prompt == .none)
        #expect(m.visibleRows.count == 3)
    }

    @Test("an app's hostile STATUS= and name are escaped: no escape sequence reaches the screen")
    func hostileText() {
        var m = Self.three
        m.rows[0].status = "ok\u{1B}[2J\u{1B}]0;owned\u{07}\r\n\u{9B}31m\u{202E}"
        m.addEvent(
            EventText.line(Event(time: "2026-12-03T10:00:00.000000Z", monotonicNanos: 1, app: "web", kind: .notify, detail: "x\u{1B}[H")))
        for color in [true, false] {
            let lines = TopRender.lines(m, width: 200, height: 30, color: color, now: 0)
            for line in lines {
                // Only SGR sequences (ESC [ digits ; m) may appear, and only with colour.
                var rest = Substring(line)
                while let esc = rest.firstIndex(of: "\u{1B}") {
                    let after = rest[rest.index(after: esc)...]
                    let sgr = after.prefix { $0 != "m" }
                    #expect(
                        color && sgr.hasPrefix("[") && sgr.dropFirst().allSatisfy { $0.isNumber || $0 == ";" }, "\(line.debugDescription)")
                    rest = after.dropFirst(sgr.count)
                }
                #expect(!line.contains("\u{07}") && !line.contains("\r") && !line.contains("\n") && !line.contains("\u{9B}"))
                #expect(!line.contains("\u{202E}"))
            }
            #expect(Self.rowLine(lines, "web")?.contains("ok\\x1B[2J\\x1B]0;owned\\x07\\x0D\\x0A\\u009B31m\\u202E") == true)
        }
    }

    @Test("without colour (NO_COLOR) the lines hold no escape sequence; with it the state is coloured as ps colours it")
    func colours() {
        let plain = TopRender.lines(Self.three, width: 120, height: 20, color: false, now: 0)
        #expect(plain.allSatisfy { !$0.contains("\u{1B}") })
        let coloured = TopRender.lines(Self.three, width: 120, height: 20, color: true, now: 0)
        // db is not selected (cache is): suspended in ps's cyan.
        let db = coloured.first { Self.plain($0).dropFirst(2).hasPrefix("db ") }
        #expect(db?.contains("\u{1B}[\(Style.of(.suspended).code)msuspended") == true, "\(db.debugDescription)")
        // The selected row is marked, in reverse video with colour.
        let cache = coloured.first { Self.plain($0).hasPrefix("> cache") }
        #expect(cache?.hasPrefix("\u{1B}[7m") == true)
        #expect(Terminal.colorEnabled(choice: .auto, noColor: "1", term: "xterm", isTerminal: true) == false)
    }

    @Test("keys: arrows and j/k move the selection; s, r, w send at once; t and e ask first; q quits")
    func keys() {
        var m = Self.three
        #expect(m.selected == "cache")
        _ = TopKeys.reduce(&m, .down)
        _ = TopKeys.reduce(&m, .char("j"))
        _ = TopKeys.reduce(&m, .char("j"))  // stays on the last
        #expect(m.selected == "web")
        _ = TopKeys.reduce(&m, .up)
        #expect(m.selected == "db")
        #expect(TopKeys.reduce(&m, .char("s")) == [.send(.suspend, "db")])
        #expect(TopKeys.reduce(&m, .char("r")) == [.send(.resume, "db")])
        #expect(TopKeys.reduce(&m, .char("w")) == [.send(.switchTo, "db")])
        #expect(m.pending == 3)
        #expect(TopKeys.reduce(&m, .char("t")).isEmpty)
        #expect(m.prompt == .confirm(.terminate, "db"))
        #expect(TopKeys.reduce(&m, .char("n")).isEmpty)
        #expect(m.prompt == .none)
        _ = TopKeys.reduce(&m, .char("e"))
        #expect(TopKeys.reduce(&m, .char("y")) == [.send(.evict, "db")])
        #expect(TopAction.evict.request("db") == .evict(names: ["db"]))
        #expect(TopAction.suspend.request("db") == .suspend(names: ["db"], graceNanos: nil))
        _ = TopKeys.reduce(&m, .char("?"))
        #expect(m.prompt == .help)
        _ = TopKeys.reduce(&m, .char("?"))
        #expect(m.prompt == .none)
        #expect(TopKeys.reduce(&m, .char("q")) == [.quit])
        #expect(TopKeys.reduce(&m, .interrupt) == [.quit])
    }

    @Test("bytes decode to keys: arrows (CSI and SS3), Esc alone, Ctrl-C, a sequence cut by a read")
    func decoding() {
        #expect(TopKeys.decode(Array("\u{1B}[A\u{1B}OBjq".utf8)).keys == [.up, .down, .char("j"), .char("q")])
        #expect(TopKeys.decode([0x1B]).keys == [.escape])
        #expect(TopKeys.decode([0x03, 0x0D, 0x7F]).keys == [.interrupt, .enter, .backspace])
        let cut = TopKeys.decode([UInt8(ascii: "s"), 0x1B, UInt8(ascii: "[")])
        #expect(cut.keys == [.char("s")])
        #expect(cut.rest == [0x1B, UInt8(ascii: "[")])
        #expect(TopKeys.decode(cut.rest + [UInt8(ascii: "B")]).keys == [.down])
        #expect(TopKeys.decode(Array("\u{1B}[5~é".utf8)).keys == [.pageUp, .char("é")])
    }

    @Test("events update a row: state and its start, freeze time; an unknown app asks for a snapshot; an ended one leaves")
    func events() {
        var m = Self.three
        var freeze = Event(time: "t", monotonicNanos: 20 * Self.second, app: "web", kind: .freeze, detail: "")
        freeze.from = .background
        freeze.to = .suspended
        freeze.durationNanos = 80_000
        let appliedFreeze = m.apply(freeze)
        #expect(appliedFreeze)
        let web = m.rows.first { $0.name == "web" }
        #expect(web?.state == .suspended && web?.sinceMonotonicNanos == 20 * Self.second && web?.lastFreezeNanos == 80_000)
        // Older than the row (read after a snapshot that had it): nothing changes.
        var stale = freeze
        stale.monotonicNanos = 1
        stale.to = .active
        let appliedStale = m.apply(stale)
        #expect(appliedStale)
        #expect(m.rows.first { $0.name == "web" }?.state == .suspended)
        var spawn = Event(time: "t", monotonicNanos: 30 * Self.second, app: "new", kind: .spawn, detail: "")
        spawn.to = .launching
        let appliedSpawn = m.apply(spawn)
        #expect(!appliedSpawn)
        var exit = Event(time: "t", monotonicNanos: 30 * Self.second, app: "db", kind: .exit, detail: "")
        exit.to = .exited
        let appliedExit = m.apply(exit)
        #expect(appliedExit)
        #expect(!m.rows.contains { $0.name == "db" })
        m.setMemory("web", bytes: (30 << 20) + (2 << 20))
        let line = Self.rowLine(TopRender.lines(m, width: 120, height: 20, color: false, now: 0), "web")
        #expect(line?.contains("32.0 MiB ↑") == true, "\(line ?? "")")
    }

    @Test("PSI text: the 10 s averages")
    func pressure() {
        let text = "some avg10=1.25 avg60=0.00 avg300=0.00 total=5017521\nfull avg10=0.50 avg60=0.00 avg300=0.00 total=2569502\n"
        #expect(TopSession.pressureText(text) == "some 1.25% full 0.50% (10 s)")
        #expect(TopSession.pressureText("") == nil)
    }

    @Test("top refuses a pipe, a non-terminal stdin and TERM=dumb or unset")
    func refusal() {
        #expect(
            TopTerminal.refusal(stdinIsTerminal: true, stdoutIsTerminal: false, term: "xterm")?.contains("stdout is not a terminal") == true
        )
        #expect(TopTerminal.refusal(stdinIsTerminal: false, stdoutIsTerminal: true, term: "xterm")?.contains("stdin") == true)
        #expect(TopTerminal.refusal(stdinIsTerminal: true, stdoutIsTerminal: true, term: "dumb")?.contains("'dumb'") == true)
        #expect(TopTerminal.refusal(stdinIsTerminal: true, stdoutIsTerminal: true, term: nil) != nil)
        #expect(TopTerminal.refusal(stdinIsTerminal: true, stdoutIsTerminal: true, term: "screen-256color") == nil)
    }
}

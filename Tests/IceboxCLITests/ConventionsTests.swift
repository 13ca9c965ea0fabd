import Foundation
import Glibc
import Testing

@testable import IceboxCLI
@testable import IceboxCore

/// The pure pieces behind the command-line conventions: suggestions, short options, operand
/// limits, --format templates, times, colour decisions and the progress bar.
@Suite("Suggestions (did you mean)")
struct SuggestionsTests {
    @Test(arguments: [
        ("", "", 0), ("abc", "", 3), ("", "ab", 2), ("kitten", "sitting", 3), ("suspnd", "suspend", 1),
        ("ps", "sp", 1), ("versoin", "version", 1), ("ca", "abc", 3), ("µs", "us", 1), ("log", "log", 0),
    ])
    func distance(_ a: String, _ b: String, _ expected: Int) {
        #expect(Suggestions.distance(a, b) == expected)
        #expect(Suggestions.distance(b, a) == expected)
    }

    @Test func closestCommands() {
        let commands = IceboxMain.commands.map { $0.spec.name }
        #expect(Suggestions.closest(to: "suspnd", among: commands) == ["suspend"])
        #expect(Suggestions.closest(to: "lgo", among: commands) == ["log"])
        #expect(Suggestions.closest(to: "PS", among: commands) == ["ps"])
        #expect(Suggestions.closest(to: "sus", among: commands) == ["suspend"], "an unambiguous prefix")
        #expect(Suggestions.closest(to: "xy", among: commands).isEmpty, "two edits on a two-letter word is no suggestion")
        #expect(Suggestions.closest(to: "frobnicate", among: commands).isEmpty)
        #expect(Suggestions.closest(to: "log", among: ["log"]).isEmpty, "the word itself is not suggested")
    }

    @Test func sentence() {
        #expect(Suggestions.didYouMean("--versoin", among: ["--help", "--version"]) == "; did you mean '--version'?")
        #expect(Suggestions.didYouMean("cgroup", among: ["cgroup2", "cgroup1", "psi"]) == "; did you mean 'cgroup2' or 'cgroup1'?")
        #expect(Suggestions.didYouMean("zzz", among: ["a"]) == "")
    }
}

@Suite("Short options and operands")
struct ShortOptionTests {
    @Test func bundledFlags() throws {
        let p = try ArgumentParser.parse(["-aq"], spec: PsCommand.spec)
        #expect(p.flag("all") && p.flag("quiet"))
        let j = try ArgumentParser.parse(["-j", "web"], spec: PsCommand.spec)
        #expect(j.flag("json") && j.positionals == ["web"])
    }

    @Test(arguments: [["-n", "20"], ["-n20"], ["--lines", "20"], ["--tail", "20"], ["--tail=20"], ["-fn", "20"]])
    func linesInEveryForm(_ args: [String]) throws {
        let p = try ArgumentParser.parse(args, spec: LogCommand.spec)
        #expect(p.value("lines") == "20")
    }

    @Test func flagAndValueTogether() throws {
        let p = try ArgumentParser.parse(["-fn", "5", "web"], spec: LogCommand.spec)
        #expect(p.flag("follow") && p.value("lines") == "5" && p.positionals == ["web"])
    }

    @Test func shortHelp() throws {
        #expect(try ArgumentParser.parse(["-h"], spec: PsCommand.spec).helpRequested)
        #expect(try ArgumentParser.parse(["-ah"], spec: PsCommand.spec).helpRequested)
    }

    @Test func unknownShortOption() {
        expectParseError(containing: "unknown option -z") { () throws(IceboxError) in
            _ = try ArgumentParser.parse(["-z"], spec: PsCommand.spec)
        }
        expectParseError(containing: "did you mean '--all'") { () throws(IceboxError) in
            _ = try ArgumentParser.parse(["-all"], spec: PsCommand.spec)
        }
        expectParseError(containing: "-n needs a value") { () throws(IceboxError) in
            _ = try ArgumentParser.parse(["-n"], spec: LogCommand.spec)
        }
        expectParseError(containing: "did you mean '--all'") { () throws(IceboxError) in
            _ = try ArgumentParser.parse(["--al"], spec: PsCommand.spec)
        }
    }

    @Test func theColorOptionIsAcceptedByEveryCommand() throws {
        for command in IceboxMain.commands {
            let p = try ArgumentParser.parse(["--color", "never"], spec: command.spec)
            #expect(p.value("color") == "never", "\(command.spec.name)")
        }
        // After the command of run, it belongs to the app.
        let run = try ArgumentParser.parse(["ls", "--color=always"], spec: RunCommand.spec)
        #expect(run.value("color") == nil && run.command == ["ls", "--color=always"])
    }

    @Test func extraOperandsAreNamed() {
        expectParseError(containing: "unexpected argument 'extra': 'doctor' takes no arguments") { () throws(IceboxError) in
            _ = try ArgumentParser.parse(["extra"], spec: DoctorCommand.spec)
        }
        expectParseError(containing: "unexpected argument 'b'") { () throws(IceboxError) in
            _ = try ArgumentParser.parse(["a", "b"], spec: LogCommand.spec)
        }
        expectParseError(containing: "unexpected argument 'c'") { () throws(IceboxError) in
            _ = try ArgumentParser.parse(["b", "c"], spec: SwitchCommand.spec)
        }
    }

    @Test func operandLimitsAndHelp() throws {
        #expect(try ArgumentParser.parse(["a", "b", "c"], spec: PsCommand.spec).positionals == ["a", "b", "c"])
        #expect(try ArgumentParser.parse(["extra", "--help"], spec: DoctorCommand.spec).helpRequested)
    }

    @Test func helpShowsShortFormsAndAliases() {
        let help = LogCommand.spec.help
        #expect(help.contains("-n, --lines N"))
        #expect(help.contains("(also --tail)"))
        #expect(help.contains("-f, --follow"))
        #expect(help.contains("--color WHEN"))
        #expect(PsCommand.spec.help.contains("-q, --quiet"))
    }

    @Test func topLevel() {
        #expect(IceboxMain.main(["icebox", "-V"]) == 0)
        #expect(IceboxMain.main(["icebox", "--versoin"]) == 64)
        #expect(IceboxMain.main(["icebox", "suspnd", "web"]) == 64)
        #expect(IceboxMain.main(["icebox", "--color", "sometimes", "ps"]) == 64)
        #expect(IceboxMain.main(["icebox", "--color=never", "help", "ps"]) == 0)
        #expect(IceboxMain.main(["icebox", "doctor", "extra"]) == 64)
    }
}

/// A parse error with a usage code whose message contains the fragment.
private func expectParseError(
    containing fragment: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws(IceboxError) -> Void
) {
    do {
        try body()
        Issue.record("expected a usage error", sourceLocation: sourceLocation)
    } catch {
        #expect(error.code == .usage, sourceLocation: sourceLocation)
        #expect(error.message.contains(fragment), "\(error.message)", sourceLocation: sourceLocation)
    }
}

@Suite("ps --format templates")
struct FormatTemplateTests {
    typealias Template = FormatTemplate<PsField>

    @Test func fieldsAndEscapes() throws {
        let t = try Template.parse("{{.Name}}\\t{{ .State }}\\n")
        #expect(!t.table)
        #expect(t.pieces == [.field(.name), .text("\t"), .field(.state), .text("\n")])
        #expect(t.render({ $0 == .name ? "web" : "active" }, json: { "" }) == "web\tactive\n")
    }

    @Test func literalTextAndJSON() throws {
        let t = try Template.parse("app={{.Name}} {{json .}} \\\\")
        #expect(t.render({ _ in "web" }, json: { "{}" }) == "app=web {} \\")
    }

    @Test func tableHeader() throws {
        let t = try Template.parse("table {{.Name}}\\t{{.LastFreeze}}\\t{{.PID}}\\t{{.MemoryBytes}}")
        #expect(t.table)
        #expect(t.header == "NAME\tLAST_FREEZE\tPID\tMEMORY_BYTES")
    }

    @Test func theDefaultTableHasSingleTokenHeaders() throws {
        let header = try Template.parse(PsCommand.defaultTable).header
        #expect(header == "NAME\tPID\tSTATE\tSINCE\tBACKEND\tMEMORY\tLAST_FREEZE\tLAST_THAW\tSTATUS")
    }

    @Test func unknownFieldsAreRefusedWithASuggestion() {
        do {
            _ = try Template.parse("{{.Nmae}}")
            Issue.record("accepted an unknown field")
        } catch {
            #expect(error.code == .usage)
            #expect(error.message.contains("did you mean '{{.Name}}'"), "\(error.message)")
            #expect(error.hint?.contains(".LastThaw") == true)
        }
        #expect(throws: IceboxError.self) { try Template.parse("{{.Name") }
        #expect(throws: IceboxError.self) { try Template.parse("{{Name}}") }
    }

    @Test func everyFieldRenders() throws {
        var record = AppRecord(
            name: "web", options: LaunchOptions(name: "web", command: ["sleep", "9"]), pid: 42, state: .suspended,
            sinceMonotonicNanos: 0, sinceWall: "2026-11-30T08:00:00.000000Z", launchedWall: "2026-11-30T08:00:00.000000Z",
            backend: .cgroup2)
        record.lastFreezeNanos = 212_000
        record.memoryBytes = 2048
        for f in PsField.allCases { #expect(f.text(of: record.summary, now: 1, wall: 0) != "" || f == .status, "\(f)") }
        #expect(PsField.command.text(of: record.summary, now: 1, wall: 0) == "sleep 9")
        #expect(PsField.lastFreeze.text(of: record.summary, now: 1, wall: 0) == "212 µs")
        #expect(PsField.lastThaw.text(of: record.summary, now: 1, wall: 0) == "–")
        #expect(PsField.memoryBytes.text(of: record.summary, now: 1, wall: 0) == "2048")
    }
}

@Suite("Times: ages, RFC 3339, --since")
struct TimeTextTests {
    static let utc: @Sendable (Int64) -> Int = { _ in 0 }
    static let plusTwo: @Sendable (Int64) -> Int = { _ in 7200 }
    // 2026-11-30T12:00:00Z
    static let noon: Int64 = 1_796_040_000 * 1_000_000_000

    @Test(arguments: [
        (0 as UInt64, "0.0s"), (4_100_000_000, "4.1s"), (42_000_000_000, "42s"), (200_000_000_000, "3m"),
        (7_300_000_000_000, "2h"), (200_000_000_000_000, "2d"),
    ])
    func ages(_ nanos: UInt64, _ text: String) {
        #expect(TimeText.age(nanos) == text)
    }

    @Test func timestamps() {
        #expect(TimeText.parseTimestamp("2026-11-30T12:00:00Z", offset: Self.utc) == Self.noon)
        #expect(TimeText.parseTimestamp("2026-11-30T12:00:00.5Z", offset: Self.utc) == Self.noon + 500_000_000)
        #expect(TimeText.parseTimestamp("2026-11-30T08:09:23.123456Z", offset: Self.utc).map { $0 % 1_000_000_000 } == 123_456_000)
        #expect(TimeText.parseTimestamp("2026-11-30T14:00:00+02:00", offset: Self.utc) == Self.noon)
        #expect(TimeText.parseTimestamp("2026-11-30 11:00-01:00", offset: Self.utc) == Self.noon)
        // No zone: local time.
        #expect(TimeText.parseTimestamp("2026-11-30T14:00", offset: Self.plusTwo) == Self.noon)
        #expect(TimeText.parseTimestamp("2026-11-30", offset: Self.utc) == Self.noon - 12 * 3600 * 1_000_000_000)
        for bad in ["", "2026-13-01", "2026-11-30T25:00Z", "2026-11-30T12:00:00+0200", "yesterday", "2026-11-30T12:00:00.Z"] {
            #expect(TimeText.parseTimestamp(bad, offset: Self.utc) == nil, "\(bad)")
        }
    }

    @Test func bounds() {
        let now = Self.noon
        #expect(TimeText.parseBound("10m", nowWallNanos: now, offset: Self.utc) == now - 600 * 1_000_000_000)
        #expect(TimeText.parseBound("1h30m", nowWallNanos: now, offset: Self.utc) == now - 5400 * 1_000_000_000)
        #expect(TimeText.parseBound("09:30", nowWallNanos: now, offset: Self.utc) == now - 9000 * 1_000_000_000)
        #expect(TimeText.parseBound("14:00:30", nowWallNanos: now, offset: Self.plusTwo) == now + 30 * 1_000_000_000)
        #expect(TimeText.parseBound("2026-11-30T12:00:00Z", nowWallNanos: 0, offset: Self.utc) == now)
        for bad in ["24:00", "9:60", "12:00:61", "soon", "-5m"] {
            #expect(TimeText.parseBound(bad, nowWallNanos: now, offset: Self.utc) == nil, "\(bad)")
        }
    }

    @Test func localCalendar() {
        let c = TimeText.civil(wallNanos: Self.noon + 1_500, offsetSeconds: 7200)
        #expect(c.date == "2026-11-30" && c.clock == "14:00:00.000001")
        #expect(TimeText.civil(wallNanos: Self.noon, offsetSeconds: 13 * 3600).date == "2026-12-01")
    }

    @Test func eventLinesCarryTheDateWhenNotFromToday() {
        var event = Event(app: "web", pid: 1, kind: .freeze, from: .background, to: .suspended, detail: "frozen", at: .read())
        event.time = "2026-11-29T23:30:00.000001Z"
        let today = EventText.line(event, nowWallNanos: Self.noon, offset: Self.plusTwo)
        #expect(today.hasPrefix("01:30:00.000001  web "), "\(today)")
        let yesterday = EventText.line(event, nowWallNanos: Self.noon, offset: Self.utc)
        #expect(yesterday.hasPrefix("2026-11-29 23:30:00.000001  web "), "\(yesterday)")
        #expect(yesterday.contains("background → suspended     frozen"))
        #expect(!yesterday.contains("\u{1B}["))
        let colored = EventText.line(event, nowWallNanos: Self.noon, offset: Self.utc, color: true)
        #expect(colored.contains("\u{1B}[36msuspended\u{1B}[0m"))
        // Coloured or not, the columns line up.
        #expect(colored.replacingOccurrences(of: "\u{1B}[36m", with: "").replacingOccurrences(of: "\u{1B}[0m", with: "") == yesterday)
    }
}

@Suite("Colour and progress")
struct TerminalTests {
    @Test func colourDecisions() {
        typealias C = ColorChoice
        let cases: [(C, String?, String?, Bool, Bool)] = [
            (.auto, nil, "xterm", true, true),
            (.auto, nil, "xterm", false, false),  // a pipe
            (.auto, "1", "xterm", true, false),  // NO_COLOR
            (.auto, "", "xterm", true, true),  // an empty NO_COLOR does not count
            (.auto, nil, "dumb", true, false),
            (.always, "1", "dumb", false, true),  // a flag beats the environment
            (.never, nil, "xterm", true, false),
        ]
        for (choice, noColor, term, tty, expected) in cases {
            #expect(
                Terminal.colorEnabled(choice: choice, noColor: noColor, term: term, isTerminal: tty) == expected,
                "\(choice) NO_COLOR=\(noColor ?? "unset") TERM=\(term ?? "") tty=\(tty)")
        }
    }

    @Test func stylesOnlyWhenEnabled() {
        #expect(Style.green.paint("active", false) == "active")
        #expect(Style.green.paint("active", true) == "\u{1B}[32mactive\u{1B}[0m")
        #expect(Style.red.paint("", true) == "")
        #expect(Style.of(.exited, exitStatus: 3) == .red)
        #expect(Style.of(.exited, exitStatus: 0) == .dim)
        #expect(Style.of(.suspended) == .cyan && Style.of(.background) == .yellow && Style.of(.active) == .green)
    }

    @Test func tablesAlignOnThePlainText() {
        let rows = [["NAME", "STATE", "X"], ["web", "active", "1"]]
        let plain = Output.table(rows)
        let colored = Output.table(rows, style: { r, c in r == 1 && c == 1 ? .green : nil }, color: true)
        #expect(plain == "NAME  STATE   X\nweb   active  1")
        #expect(colored == "NAME  STATE   X\nweb   \u{1B}[32mactive\u{1B}[0m  1")
    }

    @Test func progressBar() {
        let line = ProgressBar.line(
            label: "run 3/10", done: 5, total: 10, detail: "cold 1 ms, hot 2 µs", etaNanos: 14_000_000_000, columns: 100)
        #expect(line == "run 3/10  [██████████░░░░░░░░░░]  cold 1 ms, hot 2 µs  ETA 14s")
        let first = ProgressBar.line(label: "run 1/10", done: 0, total: 10, detail: "", etaNanos: nil, columns: 100)
        #expect(first == "run 1/10  [░░░░░░░░░░░░░░░░░░░░]  ETA …")
        #expect(ProgressBar.line(label: "run 1/10", done: 1, total: 10, detail: "x", etaNanos: 1, columns: 20).count == 19)
        #expect(ProgressBar.remaining(elapsedNanos: 6_000_000_000, done: 3, total: 10) == 14_000_000_000)
        #expect(ProgressBar.remaining(elapsedNanos: 1, done: 0, total: 10) == nil)
        #expect(ProgressBar.eta(125_000_000_000) == "2m05s")
        #expect(ProgressBar.eta(3_780_000_000_000) == "1h03m")
    }

    @Test func plurals() {
        #expect(Plural.count(1, "process", "processes") == "1 process")
        #expect(Plural.count(3, "process", "processes") == "3 processes")
        #expect(Plural.count(0, "thread") == "0 threads")
        #expect(OneShotFreeze.tasks(1, .cgroup2) == "1 process")
        #expect(OneShotFreeze.tasks(2, .signal) == "2 threads")
    }

    @Test func doctorRequirements() throws {
        #expect(try DoctorCommand.requiredFeatures(["cgroup2,psi", "psi", " pidfd "]) == [.cgroup2, .psi, .pidfd])
        #expect(try DoctorCommand.requiredFeatures([]) == [])
        do {
            _ = try DoctorCommand.requiredFeatures(["cgroup3"])
            Issue.record("accepted cgroup3")
        } catch {
            #expect(error.code == .usage && error.message.contains("did you mean"))
        }
    }
}

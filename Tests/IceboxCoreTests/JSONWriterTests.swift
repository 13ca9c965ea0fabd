import Testing

@testable import IceboxCore

/// The hand-written JSON forms (JSONWritable) against JSONEncoder, the definition: the
/// registry, the event log and the control protocol are read by other versions and tools,
/// so the bytes must not change. Values are drawn from a seeded generator (the failure
/// names the seed and the round) over awkward strings, extreme integers and every optional
/// present and absent.
@Suite("Hand-written JSON is JSONEncoder's bytes")
struct JSONWriterTests {
    /// Every C0 control, DEL, quote, backslash, slash, non-ASCII of each UTF-8 length,
    /// U+2028/2029 (which some encoders escape), a combining mark, NUL, and the empty string.
    static let awkward: [String] =
        [
            "", "a", "web", "\"", "\\", "/", "//x/", "\\\"", "\"\\\"", "\u{7F}", "\0", "a\0b", "é", "ﬁ", "日本語", "🧊",
            "e\u{301}", "\u{2028}\u{2029}", "\u{FEFF}", "\u{10FFFF}", "KEY=va\"l\\ue\n", "tab\there", "cr\r\nlf",
            "</script>", "{\"json\":[1,2]}", String(repeating: "x", count: 700),
        ] + (0..<0x20).map { String(UnicodeScalar(UInt8($0))) } + (0..<0x20).map { "x\(UnicodeScalar(UInt8($0)))y" }

    struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {  // SplitMix64
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
        mutating func chance() -> Bool { next() & 1 == 0 }
        mutating func string() -> String {
            switch below(4) {
            case 0: return JSONWriterTests.awkward[below(JSONWriterTests.awkward.count)]
            case 1: return (0..<below(4)).map { _ in JSONWriterTests.awkward[below(JSONWriterTests.awkward.count)] }.joined()
            case 2: return String((0..<below(12)).map { _ in Character(UnicodeScalar(UInt8(32 + below(95)))) })
            default:
                // Any scalar (surrogates excluded): the whole of Unicode, not just the ones listed.
                return String(
                    String.UnicodeScalarView((0..<below(6)).compactMap { _ in UnicodeScalar(UInt32(below(0x11_0000))) }))
            }
        }
        mutating func optionalString() -> String? { chance() ? string() : nil }
        mutating func integer<N: FixedWidthInteger>(_: N.Type = N.self) -> N {
            switch below(5) {
            case 0: return N.max
            case 1: return N.min
            case 2: return N(truncatingIfNeeded: below(10))
            case 3: return N(truncatingIfNeeded: -below(1000))
            default: return N(truncatingIfNeeded: next())
            }
        }
        mutating func optional<N: FixedWidthInteger>(_: N.Type = N.self) -> N? { chance() ? integer(N.self) : nil }
        mutating func pick<T>(_ all: [T]) -> T { all[below(all.count)] }
        mutating func strings() -> [String] { (0..<below(5)).map { _ in string() } }

        mutating func runAs() -> RunAs? {
            guard chance() else { return nil }
            return RunAs(
                uid: integer(), gid: integer(), groups: (0..<below(4)).map { _ in integer() }, user: optionalString(),
                group: optionalString())
        }

        mutating func options() -> LaunchOptions {
            var o = LaunchOptions(name: string(), command: strings())
            o.nameIsDefault = chance()
            o.backend = pick(BackendChoice.allCases)
            o.graceNanos = integer()
            o.maxGraceNanos = integer()
            o.backgroundSignal = pick([.auto, NoticeSignal.none, .signal(integer()), .signal(10)])
            o.foregroundSignal = optional()
            o.ready = pick([.exec, .notify, .tcp(integer()), .command(string()), .http("http://127.0.0.1:80/a/b?c=\"d\"")])
            o.readyTimeoutNanos = integer()
            o.workingDirectory = optionalString()
            o.environment = strings()
            o.extraEnvironment = strings()
            o.priority = pick(PriorityBand.allCases)
            o.compactAfterNanos = optional()
            o.attached = chance()
            o.watchdogNanos = optional()
            o.watchdogAction = chance() ? pick(WatchdogAction.allCases) : nil
            o.startLimitBurst = optional()
            o.startLimitIntervalNanos = optional()
            o.runAs = runAs()
            o.pidNamespace = chance()
            o.evictTo = chance() ? pick(EvictionTarget.allCases) : nil
            return o
        }

        mutating func record() -> AppRecord {
            var r = AppRecord(
                name: string(), options: options(), pid: integer(), state: pick(AppState.allCases),
                sinceMonotonicNanos: integer(), sinceWall: string(), launchedWall: string(), backend: pick(BackendKind.allCases))
            r.startTicks = integer()
            r.cgroup = optionalString()
            r.freezerV1 = optionalString()
            r.spawnMethod = string()
            r.coldStartNanos = optional()
            r.lastFreezeNanos = optional()
            r.lastThawNanos = optional()
            r.statusText = optionalString()
            r.exitStatus = optional()
            r.ending = optionalString()
            r.memoryBytes = optional()
            r.killedWhileSuspended = chance()
            r.memoryV1 = optionalString()
            r.memorySource = optionalString()
            r.lastCompaction = optionalString()
            r.launchStartNanos = integer()
            r.graceStartNanos = optional()
            r.graceDeadlineNanos = optional()
            r.graceCapNanos = optional()
            r.endIntent = chance() ? pick([AppLifecycle.Ending.terminate, .evict]) : nil
            r.endStartNanos = optional()
            r.killDeadlineNanos = optional()
            r.runsAs = runAs()
            r.notifySocket = optionalString()
            r.restartTimesNanos = chance() ? (0..<below(4)).map { _ in integer() } : nil
            r.adoptedFrom = optionalString()
            r.adoptedFromFreezerV1 = optionalString()
            r.adoptedFromMemoryV1 = optionalString()
            r.adoptMoveNanos = optional()
            return r
        }

        mutating func event() -> Event {
            var e = Event(
                app: string(), pid: optional(), kind: pick(EventKind.allCases), from: chance() ? pick(AppState.allCases) : nil,
                to: chance() ? pick(AppState.allCases) : nil, durationNanos: optional(), detail: string(),
                at: Instant(monotonicNanos: integer(), wallNanos: 0))
            e.time = string()
            e.reason = optionalString()
            e.backend = chance() ? pick(BackendKind.allCases) : nil
            e.tasks = optional()
            e.graceNanos = optional()
            e.exitStatus = optional()
            e.band = chance() ? pick(PriorityBand.allCases) : nil
            e.memoryBeforeBytes = optional()
            e.memoryAfterBytes = optional()
            e.victimMemoryBytes = optional()
            e.pids = chance() ? (0..<below(4)).map { _ in integer() } : nil
            e.evictedFor = chance() ? pick(EvictionReason.Kind.allCases) : nil
            return e
        }

        mutating func request() -> ControlRequest {
            switch below(18) {
            case 0: return .ping
            case 1: return .launch(options: options())
            case 2: return .ps(all: chance(), brief: chance())
            case 3: return .suspend(names: strings(), graceNanos: optional())
            case 4: return .resume(names: strings(), waitReady: chance())
            case 5: return .switchTo(name: string())
            case 6: return .terminate(names: strings(), timeoutNanos: optional())
            case 7: return .evict(names: strings(), toDisk: chance())
            case 8: return .relaunch(name: string())
            case 9: return .compact(names: strings(), mode: chance() ? .pageout : nil)
            case 10: return .policy
            case 11: return .setPolicy(settings: [.memoryBudget(optional()), .pressureScope(.apps), .maxSuspended(optional())])
            case 12: return .stop(terminateApps: chance(), timeoutNanos: optional())
            case 13: return .forget(names: strings())
            case 14:
                var o = AdoptOptions(name: string(), source: chance() ? .pid(optional() ?? 7) : .cgroup(string()))
                o.graceNanos = integer()
                o.foregroundSignal = optional()
                o.compactAfterNanos = optional()
                o.backgroundSignal = chance() ? .auto : .signal(10)
                return .adopt(options: o)
            case 15: return .release(name: string())
            default: return .metrics(format: pick(MetricsFormat.allCases))
            }
        }

        mutating func reply() -> ControlReply {
            var r = ControlReply(kind: pick([.line, .warning, .event, .data, .done, .exit]), text: optionalString(), code: optional())
            if chance() { r.event = event() }
            if chance() { r.apps = (0..<below(3)).map { _ in record() } }
            if chance() { r.summaries = (0..<below(3)).map { _ in record().summary } }
            if below(4) == 0 {
                var policy = EvictionPolicy()
                policy.memoryBudgetBytes = optional()
                policy.evictTo = chance() ? .disk : .kill
                r.policy = policy
            }
            return r
        }
    }

    /// Both encoders on the value; on a difference, the first byte where they part.
    func expectSame<T: JSONWritable>(_ value: T, _ what: @autoclosure () -> String) {
        let fast = JSONLines.encode(value), slow = JSONLines.encodeWithFoundation(value)
        if fast != slow {
            let at = zip(fast.utf8, slow.utf8).prefix { $0 == $1 }.count
            func around(_ text: String) -> String {
                String(decoding: Array(text.utf8.dropFirst(max(0, at - 40)).prefix(100)), as: UTF8.self)
            }
            let message =
                "\(what()): the hand-written JSON differs from JSONEncoder's at byte \(at):\n"
                + " hand-written: …\(around(fast))\n JSONEncoder:  …\(around(slow))"
            Issue.record(Comment(rawValue: message))
        }
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func randomValuesEncodeToTheSameBytes(seed: UInt64) {
        var g = Generator(state: seed)
        for round in 0..<150 {
            expectSame(g.record(), "AppRecord, seed \(seed) round \(round)")
            expectSame(g.record().redacted.summary, "AppSummary, seed \(seed) round \(round)")
            expectSame(g.event(), "Event, seed \(seed) round \(round)")
            expectSame(g.reply(), "ControlReply, seed \(seed) round \(round)")
            expectSame(g.request(), "ControlRequest, seed \(seed) round \(round)")
            expectSame((0..<g.below(3)).map { _ in g.record() }, "[AppRecord], seed \(seed) round \(round)")
        }
    }

    @Test(arguments: JSONWriterTests.awkward)
    func everyAwkwardStringEncodesToTheSameBytes(_ text: String) {
        var e = Event(app: text, pid: nil, kind: .notify, detail: text, at: Instant(monotonicNanos: 0, wallNanos: 0))
        e.time = text
        expectSame(e, "Event with \(text.unicodeScalars.map { String($0.value, radix: 16) })")
        expectSame(ControlRequest.suspend(names: [text, text], graceNanos: nil), "a request naming \(text.debugDescription)")
    }

    @Test func extremeIntegersEncodeToTheSameBytes() {
        var e = Event(
            app: "a", pid: Int32.min, kind: .freeze, durationNanos: UInt64.max, detail: "", at: Instant(monotonicNanos: 0, wallNanos: 0))
        e.tasks = Int.min
        e.exitStatus = Int32.max
        e.pids = [0, -1, Int32.min, Int32.max]
        expectSame(e, "Event with extreme integers")
        e.tasks = Int.max
        e.pid = 0
        expectSame(e, "Event with extreme integers")
    }

    /// Every optional present at once and every one absent: a field added to a type but not to
    /// its hand-written form shows in the first.
    @Test func everyFieldPresentAndAbsent() {
        // Every member of the record set (JSONFieldsTests), and of its launch options here.
        var full = JSONFieldsTests.fullRecord()
        full.options.foregroundSignal = 18
        full.options.workingDirectory = "/w"
        full.options.compactAfterNanos = 9
        full.options.watchdogNanos = 10
        full.options.watchdogAction = .restart
        full.options.startLimitBurst = 11
        full.options.startLimitIntervalNanos = 12
        full.options.runAs = full.runsAs
        full.options.pidNamespace = true
        full.options.evictTo = .disk
        expectSame(full, "AppRecord with every field")

        let bare = AppRecord(
            name: "", options: LaunchOptions(name: "", command: []), pid: 0, state: .launching, sinceMonotonicNanos: 0,
            sinceWall: "", launchedWall: "", backend: .signal)
        expectSame(bare, "AppRecord with no optional field")
        expectSame(ControlReply(kind: .done), "ControlReply with no optional field")
        var withPolicy = ControlReply(kind: .data)
        withPolicy.policy = EvictionPolicy()
        expectSame(withPolicy, "ControlReply carrying a policy")
    }

    /// The comparison can fail: JSONEncoder's bytes for a value differ from a near miss.
    @Test func theComparisonSeesADifference() {
        var writer = JSONWriter()
        writer.object { w in
            w.field("b", "x")
            w.field("a", "y")  // out of order: JSONEncoder sorts
        }
        #expect(String(decoding: writer.bytes, as: UTF8.self) != JSONLines.encodeWithFoundation(["a": "y", "b": "x"]))
    }
}

import Testing

@testable import IceboxCore

@Suite("ReadyMode, LaunchOptions and the control protocol as JSON")
struct ProtocolCodingTests {
    @Test func readyModeParsesEveryForm() {
        #expect(ReadyMode.parse("exec") == .exec)
        #expect(ReadyMode.parse("notify") == .notify)
        #expect(ReadyMode.parse("tcp:8000") == .tcp(8000))
        #expect(ReadyMode.parse("tcp:65535") == .tcp(65535))
        #expect(ReadyMode.parse("cmd:curl -sf x") == .command("curl -sf x"))
        #expect(ReadyMode.parse("cmd:a:b") == .command("a:b"))
    }

    @Test(arguments: ["tcp:0", "tcp:x", "tcp:", "tcp:65536", "tcp:-1", "cmd:", "", "EXEC", "Notify", "tcp 8000", "http:80"])
    func readyModeRejects(_ text: String) {
        #expect(ReadyMode.parse(text) == nil)
    }

    @Test(arguments: [ReadyMode.exec, .notify, .tcp(8000), .command("curl -sf x")])
    func readyModeRoundTripsThroughJSON(_ mode: ReadyMode) throws {
        let json = JSONLines.encode([mode])
        #expect(json == "[\"\(mode.description)\"]")
        #expect(try #require(JSONLines.decode([ReadyMode].self, json)) == [mode])
    }

    @Test func readyModeDescriptionIsWhatParseReads() {
        for mode: ReadyMode in [.exec, .notify, .tcp(1), .command("true")] {
            #expect(ReadyMode.parse(mode.description) == mode)
        }
    }

    @Test(arguments: ["[\"tcp:0\"]", "[\"tcp:x\"]", "[\"cmd:\"]", "[\"bogus\"]", "[42]"])
    func readyModeDecodingRejectsInvalidText(_ json: String) {
        #expect(JSONLines.decode([ReadyMode].self, json) == nil)
        #expect(throws: DecodingError.self) { try JSONLines.decodeOrError([ReadyMode].self, json) }
    }

    @Test func launchOptionsDefaults() {
        let o = LaunchOptions(name: "web", command: ["sleep", "1"])
        #expect(o.backend == .auto)
        #expect(o.graceNanos == 5_000_000_000)
        #expect(o.maxGraceNanos == 30_000_000_000)
        #expect(o.backgroundSignal == .auto)
        #expect(o.foregroundSignal == nil)
        #expect(o.ready == .exec)
        #expect(o.readyTimeoutNanos == 30_000_000_000)
        #expect(!o.attached && !o.nameIsDefault)
    }

    @Test func launchOptionsRoundTripWithEveryFieldSet() throws {
        var o = LaunchOptions(name: "web-2", command: ["python3", "-m", "http.server", "--bind", "127.0.0.1"])
        o.nameIsDefault = true
        o.backend = .cgroup1
        o.graceNanos = 2_000_000_000
        o.maxGraceNanos = 10_000_000_000
        o.backgroundSignal = .signal(12)
        o.foregroundSignal = 18
        o.ready = .command("curl -sf http://127.0.0.1:8000/")
        o.readyTimeoutNanos = 1_500_000_000
        o.workingDirectory = "/srv/my app"
        o.environment = ["PATH=/usr/bin:/bin", "HOME=/root"]
        o.extraEnvironment = ["A=b=c"]
        o.attached = true
        let json = JSONLines.encode(o)
        #expect(!json.contains("\n"), "one object a line")
        #expect(json.contains("\"ready\":\"cmd:curl -sf http://127.0.0.1:8000/\""))
        let back = try #require(JSONLines.decode(LaunchOptions.self, json))
        #expect(back == o)
    }

    @Test func launchOptionsEncodeAsOneSortedCompactObject() {
        // The registry and the control socket depend on this form: sorted keys, nil optionals left out.
        let o = LaunchOptions(name: "web", command: ["sleep", "1"])
        #expect(
            JSONLines.encode(o)
                == #"{"attached":false,"backend":"auto","background_signal":"auto","command":["sleep","1"],"environment":[],"extra_environment":[],"grace_ns":5000000000,"max_grace_ns":30000000000,"name":"web","name_is_default":false,"pid_namespace":false,"priority":"normal","ready":"exec","ready_timeout_ns":30000000000}"#
        )
    }

    @Test func slashesAreNotEscaped() {
        var o = LaunchOptions(name: "web", command: ["/usr/bin/python3"])
        o.workingDirectory = "/srv/app"
        let json = JSONLines.encode(o)
        #expect(json.contains(#""command":["/usr/bin/python3"]"#))
        #expect(json.contains(#""working_directory":"/srv/app""#))
    }

    @Test(arguments: [
        ControlRequest.ping, .launch(options: LaunchOptions(name: "web", command: ["sleep", "9"])), .ps(all: true),
        .suspend(names: ["web", "db"]), .resume(names: ["web"], waitReady: true), .switchTo(name: "web"),
        .terminate(names: ["web"], timeoutNanos: 7_000_000_000), .terminate(names: ["web"], timeoutNanos: nil),
        .evict(names: ["db"]), .relaunch(name: "web"), .compact(names: ["web"], mode: .cold), .policy,
        .evict(names: ["db", "web"], toDisk: true),
        .setPolicy(settings: [.memoryBudget(1 << 30), .pressure(nil), .onLockContention(.evict)]),
        .stop(terminateApps: true, timeoutNanos: nil), .forget(names: ["bench"]), .version,
        .adopt(options: AdoptOptions(name: "build", source: .pid(4242))), .adopt(options: AdoptOptions(name: "b", source: .cgroup("/x y"))),
        .release(name: "build"),
        .setPolicy(settings: [
            .pressureScope(.apps), .maxSuspended(nil), .maxSuspended(2), .evictionGrace(5), .protectActive(false), .compactAfter(nil),
            .compactAfter(9), .compactMode(.cold), .memoryBudget(nil), .pressure("some 150ms/2s"), .evictTo(.disk), .evictTo(.kill),
        ]),
    ])
    func controlRequestRoundTrips(_ request: ControlRequest) throws {
        let json = JSONLines.encode(request)
        #expect(try JSONLines.decodeOrError(ControlRequest.self, json) == request, "\(json)")
        #expect(!json.contains("Nanos") && !json.contains("waitReady"), "one key style: \(json)")
        // docs/protocol.md: every value has a name a client can write by hand.
        #expect(!json.contains("\"_0\""), "an unlabeled value: \(json)")
    }

    /// A line that is no request is refused with what was wrong: not an object, a name that
    /// is no request (and the ones there are), or a request whose members are wrong.
    @Test func refusalsNameWhatWasWrong() {
        func refusal(_ line: String) -> IceboxError {
            ControlRequest.refusal(of: line, DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "the decoder's words")))
        }
        let unknown = refusal(#"{"bogus_thing":{}}"#)
        #expect(unknown.code == .usage && unknown.message == "unknown request 'bogus_thing'", "\(unknown)")
        #expect(unknown.hint?.contains("the requests are ping, version, launch") == true, "\(unknown.hint ?? "")")
        #expect(refusal(#"{"suspend":{"grace_ns":1}}"#).message == "malformed suspend request: the decoder's words")
        #expect(refusal(#"{"switch_to":{}}"#).message.hasPrefix("malformed switch_to request: "))
        #expect(refusal(#"[1]"#).message.hasPrefix("malformed request: not a JSON object"))
        // What the decoder found, in the protocol's words.
        func decoded(_ line: String) -> String {
            do {
                _ = try JSONLines.decodeWithFoundation(ControlRequest.self, line)
                return "decoded"
            } catch { return ControlRequest.refusal(of: line, error).message }
        }
        #expect(decoded(#"{"suspend":{"grace_ns":1}}"#) == "malformed suspend request: no suspend.names member")
        #expect(decoded(#"{"resume":{"names":"web","wait_ready":false}}"#) == "malformed resume request: resume.names is not an array")
        #expect(refusal(#"{"ping":{},"ps":{}}"#).message.hasPrefix("malformed request: not a JSON object with one member"))
    }

    /// Every request's name on the wire is in the list the refusal gives and the document has.
    @Test func wireNamesAreEveryRequest() throws {
        let requests: [ControlRequest] = [
            .ping, .version, .launch(options: LaunchOptions(name: "a", command: ["b"])),
            .adopt(options: AdoptOptions(name: "a", source: .pid(2))), .release(name: "a"), .ps(all: false), .suspend(names: []),
            .resume(names: [], waitReady: false), .switchTo(name: "a"), .terminate(names: [], timeoutNanos: nil), .evict(names: []),
            .relaunch(name: "a"), .compact(names: [], mode: nil), .forget(names: []), .policy, .setPolicy(settings: []),
            .metrics(format: .prometheus), .stop(terminateApps: false, timeoutNanos: nil),
        ]
        let names = requests.map { request in
            String(JSONLines.encode(request).dropFirst(2).prefix { $0 != "\"" })
        }
        #expect(names == ControlRequest.wireNames)
        let document = try String(contentsOfFile: #filePath.components(separatedBy: "/Tests/")[0] + "/docs/protocol.md", encoding: .utf8)
        for name in names { #expect(document.contains("| `\(name)` |"), "docs/protocol.md has no row for \(name)") }
    }

    /// The forms docs/protocol.md shows, byte for byte.
    @Test func protocolDocumentForms() throws {
        #expect(JSONLines.encode(ControlRequest.version) == #"{"version":{}}"#)
        #expect(
            JSONLines.encode(ControlRequest.setPolicy(settings: [.memoryBudget(1 << 30), .pressure(nil), .evictionGrace(1_000_000_000)]))
                == #"{"set_policy":{"settings":[{"memory_budget_bytes":1073741824},{"pressure":null},{"eviction_grace_ns":1000000000}]}}"#)
        #expect(
            JSONLines.encode(ControlRequest.launch(options: LaunchOptions(name: "web", command: ["sleep", "9"]))).hasPrefix(
                #"{"launch":{"options":{"#))
        #expect(
            JSONLines.decode(ControlRequest.self, #"{"adopt":{"options":{"name":"build","source":{"pid":4242}}}}"#)
                == .adopt(options: AdoptOptions(name: "build", source: .pid(4242))))
        #expect(JSONLines.decode(AdoptSource.self, #"{"pid":1,"cgroup":"/x"}"#) == nil)
        // Launch options: the name and the command are enough, in either reader.
        let minimal = #"{"name":"web","command":["sleep","9"]}"#
        #expect(JSONLines.decode(LaunchOptions.self, minimal) == LaunchOptions(name: "web", command: ["sleep", "9"]))
        #expect(try JSONLines.decodeWithFoundation(LaunchOptions.self, minimal) == LaunchOptions(name: "web", command: ["sleep", "9"]))
        #expect(JSONLines.decode(LaunchOptions.self, #"{"name":"web"}"#) == nil)
        // A setting names one member; two, or an unknown one, is refused rather than half read.
        #expect(JSONLines.decode(PolicySetting.self, #"{"pressure":null,"max_suspended":1}"#) == nil)
        #expect(JSONLines.decode(PolicySetting.self, #"{"memory":1}"#) == nil)
        var reply = ControlReply(kind: .data, text: "icebox control protocol 1")
        reply.protocolVersion = ControlRequest.protocolVersion
        #expect(JSONLines.encode(reply) == #"{"kind":"data","protocol_version":1,"text":"icebox control protocol 1"}"#)
    }

    @Test func controlRequestKeysAreSnakeCase() {
        #expect(
            JSONLines.encode(ControlRequest.terminate(names: ["a"], timeoutNanos: 5)) == #"{"terminate":{"names":["a"],"timeout_ns":5}}"#)
        #expect(JSONLines.encode(ControlRequest.switchTo(name: "a")) == #"{"switch_to":{"name":"a"}}"#)
    }

    @Test(arguments: [
        ("durationNanos", "duration_ns"), ("monotonicNanos", "monotonic_ns"), ("freezerV1", "freezer_v1"),
        ("pid", "pid"), ("memoryBeforeBytes", "memory_before_bytes"), ("switchTo", "switch_to"), ("nanos", "nanos"),
    ])
    func jsonKeyStyleRoundTrips(_ swift: String, _ json: String) {
        #expect(JSONKeyStyle.snake(swift) == json)
        #expect(JSONKeyStyle.camel(json) == swift)
    }

    @Test func olderCamelCaseRecordsStillRead() throws {
        let old =
            #"{"attached":false,"backend":"signal","backgroundSignal":"10","command":["sleep","1"],"environment":[],"extraEnvironment":[],"graceNanos":7,"maxGraceNanos":30000000000,"name":"web","nameIsDefault":false,"priority":"normal","ready":"exec","readyTimeoutNanos":30000000000}"#
        let o = try JSONLines.decodeOrError(LaunchOptions.self, old)
        #expect(o.graceNanos == 7 && o.backend == .signal && o.backgroundSignal == .signal(10))
    }

    @Test func psRecordsNameTheEnvironmentButNotItsValues() {
        var o = LaunchOptions(name: "web", command: ["sleep", "1"])
        o.environment = ["HOME=/root", "API_TOKEN=s3cret"]
        o.extraEnvironment = ["DB_PASSWORD=hunter2"]
        let r = AppRecord(
            name: "web", options: o, pid: 1, state: .active, sinceMonotonicNanos: 0, sinceWall: "", launchedWall: "",
            backend: .signal)
        let json = JSONLines.encode(r.redacted)
        #expect(!json.contains("s3cret") && !json.contains("hunter2") && !json.contains("/root"))
        #expect(r.redacted.options.environment == ["HOME", "API_TOKEN"])
        #expect(r.redacted.options.extraEnvironment == ["DB_PASSWORD"])
    }

    /// The name ends at the first `=` byte even where a combining mark makes `=` part of a
    /// larger character (a search by Character once showed such a value whole).
    @Test func psRecordsCutTheNameAtTheFirstEqualsByte() {
        var o = LaunchOptions(name: "web", command: ["sleep", "1"])
        o.environment = ["TOKEN=\u{338}s3cret", "\u{600}=x", "NOVALUE", "=lead", "É=1"]
        let r = AppRecord(
            name: "web", options: o, pid: 1, state: .active, sinceMonotonicNanos: 0, sinceWall: "", launchedWall: "",
            backend: .signal)
        #expect(r.redacted.options.environment == ["TOKEN", "\u{600}", "NOVALUE", "", "É"])
        #expect(!JSONLines.encode(r.redacted).contains("s3cret"))
    }

    @Test func controlReplyRoundTripsWithAnEvent() throws {
        var reply = ControlReply(kind: .event, text: "hello", code: 3)
        let event = Event(
            app: "web", pid: 4242, kind: .freeze, from: .background, to: .suspended,
            durationNanos: 212_000, detail: "cgroup2: 3 tasks", at: .read())
        reply.event = event
        let json = JSONLines.encode(reply)
        #expect(json.contains("\"kind\":\"event\""))
        let back = try #require(JSONLines.decode(ControlReply.self, json))
        #expect(back.kind == .event)
        #expect(back.text == "hello")
        #expect(back.code == 3)
        #expect(back.event == event)
        #expect(back.apps == nil)
    }

    @Test(arguments: [ControlReply.Kind.line, .warning, .event, .data, .done, .exit])
    func controlReplyKindsRoundTrip(_ kind: ControlReply.Kind) throws {
        let back = try #require(JSONLines.decode(ControlReply.self, JSONLines.encode(ControlReply(kind: kind, code: 0))))
        #expect(back.kind == kind)
        #expect(JSONLines.encode(ControlReply(kind: kind)) == "{\"kind\":\"\(kind.rawValue)\"}")
    }

    @Test func eventUsesSnakeCaseKeysOnDisk() throws {
        var e = Event(
            app: "web", pid: 4242, kind: .freeze, from: .background, to: .suspended,
            durationNanos: 212_000, detail: "SIGUSR1 sent", at: .read())
        e.time = "2026-11-30T08:09:23.123456Z"
        e.monotonicNanos = 987_654_321
        let json = JSONLines.encode(e)
        #expect(
            json
                == #"{"app":"web","detail":"SIGUSR1 sent","duration_ns":212000,"event":"freeze","from":"background","monotonic_ns":987654321,"pid":4242,"time":"2026-11-30T08:09:23.123456Z","to":"suspended"}"#
        )
        #expect(!json.contains("\"kind\"") && !json.contains("Nanos"))
        #expect(try #require(JSONLines.decode(Event.self, json)) == e)
    }

    @Test func eventDecodesFromItsOnDiskForm() throws {
        let line = #"{"app":"db","detail":"exited","event":"exit","monotonic_ns":5,"time":"1970-01-01T00:00:00.000000Z","to":"exited"}"#
        let e = try #require(JSONLines.decode(Event.self, line))
        #expect(e.app == "db" && e.kind == .exit && e.monotonicNanos == 5 && e.to == .exited)
        #expect(e.pid == nil && e.from == nil && e.durationNanos == nil)
        // The Swift property name of the kind is not its key.
        #expect(JSONLines.decode(Event.self, #"{"app":"db","detail":"","kind":"exit","monotonic_ns":5,"time":"t"}"#) == nil)
    }

    @Test func eventHumanLineShowsTheTransition() {
        var e = Event(app: "web", pid: 1, kind: .grace, from: .active, to: .background, detail: "SIGUSR1 sent", at: .read())
        e.time = "2026-11-30T08:09:23.123456Z"
        #expect(e.humanLine.hasPrefix("08:09:23.123456  web          active → background"))
        #expect(e.humanLine.hasSuffix(" SIGUSR1 sent"))
    }

    @Test func decodeOfGarbageIsNil() {
        #expect(JSONLines.decode(ControlRequest.self, "not json") == nil)
        #expect(JSONLines.decode(ControlRequest.self, "{}") == nil)  // a command is required
        #expect(JSONLines.decode(ControlRequest.self, #"{"reboot":{}}"#) == nil)
    }
}

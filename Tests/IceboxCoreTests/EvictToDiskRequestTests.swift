import Foundation
import Glibc
import Testing

@testable import IceboxCore

/// The request and policy surface of evicting to disk (issue 32): `evict`'s `to_disk` member
/// and the policy's `evict_to`, in every codec, with the forms from before them still read.
@Suite("Evict to disk: request and policy")
struct EvictToDiskRequestTests {
    /// Both readers of a line: the hand-written one (nil if it gave the line up) and JSONDecoder.
    func readings(_ line: String) -> (fast: ControlRequest?, foundation: ControlRequest?) {
        (JSONReader.read(line) { ControlRequest(json: &$0) }, try? JSONLines.decodeWithFoundation(ControlRequest.self, line))
    }

    /// What the daemon answers a line that does not read as a request.
    func refusal(_ line: String) -> String {
        do {
            _ = try JSONLines.decodeWithFoundation(ControlRequest.self, line)
            return "decoded"
        } catch { return ControlRequest.refusal(of: line, error).message }
    }

    @Test(
        "evict round-trips through JSONWriter, JSONEncoder, JSONReader and JSONDecoder, with and without to_disk",
        arguments: [
            (ControlRequest.evict(names: ["a", "b"], toDisk: true), #"{"evict":{"names":["a","b"],"to_disk":true}}"#),
            (.evict(names: ["a"], toDisk: false), #"{"evict":{"names":["a"],"to_disk":false}}"#),
            (.evict(names: ["a"]), #"{"evict":{"names":["a"],"to_disk":false}}"#),
            (.evict(names: [], toDisk: true), #"{"evict":{"names":[],"to_disk":true}}"#),
        ])
    func evictRoundTrips(_ request: ControlRequest, _ wire: String) throws {
        #expect(JSONLines.encode(request) == wire, "JSONWriter")
        #expect(JSONLines.encodeWithFoundation(request) == wire, "JSONEncoder, the definition JSONWriter is held to")
        let (fast, foundation) = readings(wire)
        #expect(fast == request, "JSONReader took \(wire) as \(String(describing: fast))")
        #expect(foundation == request, "JSONDecoder took \(wire) as \(String(describing: foundation))")
        #expect(try JSONLines.decodeOrError(ControlRequest.self, wire) == request)
    }

    @Test("an evict without to_disk (a client from before it), or with null, is the kill, in both readers")
    func oldFormIsTheKill() throws {
        for line in [
            #"{"evict":{"names":["web","db"]}}"#, #"{"evict":{"names":["web","db"],"to_disk":null}}"#,
            // JSONDecoder's alone: the plain-form reader gives up on white space.
            #"{ "evict" : { "names" : [ "web", "db" ] } }"#,
        ] {
            #expect(try JSONLines.decodeOrError(ControlRequest.self, line) == .evict(names: ["web", "db"], toDisk: false), "\(line)")
            #expect(try JSONLines.decodeWithFoundation(ControlRequest.self, line) == .evict(names: ["web", "db"]), "\(line)")
        }
        #expect(readings(#"{"evict":{"names":["web"]}}"#).fast == .evict(names: ["web"]), "the fast path takes the old form")
        #expect(
            try JSONLines.decodeOrError(ControlRequest.self, #"{ "evict": {"to_disk": true, "names": ["web"]} }"#)
                == .evict(names: ["web"], toDisk: true))
    }

    @Test("a wrong evict is refused with the member named, and the other requests keep their rules")
    func wrongFormsAreRefused() {
        #expect(refusal(#"{"evict":{"to_disk":true}}"#) == "malformed evict request: no evict.names member")
        #expect(refusal(#"{"evict":{"names":["a"],"to_disk":"yes"}}"#) == "malformed evict request: evict.to_disk is not true or false")
        #expect(refusal(#"{"evict":{"names":"a"}}"#) == "malformed evict request: evict.names is not an array")
        #expect(readings(#"{"evict":{"names":["a"],"to_disk":1}}"#) == (nil, nil))
        // Requests read through the hand-written Decodable as they were by the synthesized one.
        #expect(refusal(#"{"ps":{"all":true}}"#) == "malformed ps request: no ps.brief member")
        #expect(refusal(#"{"suspend":{"grace_ns":1}}"#) == "malformed suspend request: no suspend.names member")
        #expect(refusal(#"{"evict":{"names":[]},"ping":{}}"#).hasPrefix("malformed request: not a JSON object with one member"))
        #expect(readings(#"{"evict":{"names":[]},"ping":{}}"#) == (nil, nil), "one member a request, in both readers")
        #expect(readings(#"{"terminate":{"names":["a"]}}"#).foundation == .terminate(names: ["a"], timeoutNanos: nil))
        #expect(readings(#"{"compact":{"names":["a"],"mode":"cold"}}"#).foundation == .compact(names: ["a"], mode: .cold))
    }

    @Test("evict-to parses kill and disk; anything else is a usage error (64) naming both")
    func evictToParses() throws {
        #expect(try PolicySetting.parse(key: "evict-to", value: "disk") == .evictTo(.disk))
        #expect(try PolicySetting.parse(key: "evict-to", value: "kill") == .evictTo(.kill))
        #expect(PolicySetting.keys.contains("evict-to"))
        for bad in ["swap", "", "Disk", "none", "disk "] {
            do {
                _ = try PolicySetting.parse(key: "evict-to", value: bad)
                Issue.record("--evict-to '\(bad)' was taken")
            } catch {
                #expect(error.code == .usage && error.code.rawValue == 64, "\(error)")
                #expect(error.message == "invalid --evict-to '\(bad)'", "\(error.message)")
                let hint = error.hint ?? ""
                #expect(hint.contains("kill") && hint.contains("disk"), "the values are named: \(hint)")
            }
        }
        #expect(PolicySetting.evictTo(.disk).summary == "evict-to=disk")
    }

    @Test("the evict_to setting and a policy with it round-trip; set_policy carries it")
    func policyRoundTrips() throws {
        #expect(JSONLines.encode(PolicySetting.evictTo(.disk)) == #"{"evict_to":"disk"}"#)
        #expect(JSONLines.decode(PolicySetting.self, #"{"evict_to":"kill"}"#) == .evictTo(.kill))
        #expect(JSONLines.decode(PolicySetting.self, #"{"evict_to":"swap"}"#) == nil)
        let request = ControlRequest.setPolicy(settings: [.evictTo(.disk), .maxSuspended(2)])
        let line = JSONLines.encode(request)
        #expect(line == #"{"set_policy":{"settings":[{"evict_to":"disk"},{"max_suspended":2}]}}"#)
        #expect(JSONLines.encodeWithFoundation(request) == line)
        #expect(try JSONLines.decodeOrError(ControlRequest.self, line) == request)

        var policy = EvictionPolicy()
        #expect(policy.evictTo == .kill, "the default is today's kill")
        policy.apply(.evictTo(.disk))
        #expect(policy.evictTo == .disk)
        let json = JSONLines.encode(policy)
        #expect(json.contains(#""evict_to":"disk""#), "\(json)")
        #expect(try JSONLines.decodeOrError(EvictionPolicy.self, json) == policy)
        #expect(policy.lines.contains("evict to           disk"), "\(policy.lines)")
        try policy.set("evict-to", "kill")
        #expect(policy.evictTo == .kill)
        // A policy reply carries it.
        var reply = ControlReply(kind: .data)
        reply.policy = policy
        #expect(JSONLines.decode(ControlReply.self, JSONLines.encode(reply))?.policy == policy)
    }

    @Test("criu-timeout takes a duration above zero; the policy keeps it, and one saved before it gives criu 2 minutes")
    func criuTimeoutParses() throws {
        #expect(try PolicySetting.parse(key: "criu-timeout", value: "30s") == .criuTimeout(30_000_000_000))
        #expect(try PolicySetting.parse(key: "criu-timeout", value: "1ms") == .criuTimeout(1_000_000))
        #expect(PolicySetting.keys.contains("criu-timeout"))
        for bad in ["0", "0s", "", "-1s", "soon", "2min", "1e30"] {
            do {
                _ = try PolicySetting.parse(key: "criu-timeout", value: bad)
                Issue.record("--criu-timeout '\(bad)' was taken")
            } catch {
                #expect(error.code == .usage && error.message == "invalid --criu-timeout '\(bad)'", "\(error)")
                #expect(error.hint?.contains("above zero") == true, "\(error.hint ?? "")")
            }
        }
        #expect(PolicySetting.criuTimeout(90_000_000_000).summary == "criu-timeout=1m30s")
        #expect(JSONLines.encode(PolicySetting.criuTimeout(5)) == #"{"criu_timeout_ns":5}"#)
        #expect(JSONLines.decode(PolicySetting.self, #"{"criu_timeout_ns":7}"#) == .criuTimeout(7))

        var policy = EvictionPolicy()
        #expect(policy.criuTimeoutNanos == 120_000_000_000, "the default: 2 minutes, as before the setting")
        try policy.set("criu-timeout", "45s")
        #expect(policy.criuTimeoutNanos == 45_000_000_000 && policy.lines.contains("criu timeout       45.0s"), "\(policy.lines)")
        let json = JSONLines.encode(policy)
        #expect(try JSONLines.decodeOrError(EvictionPolicy.self, json) == policy)
        let old = json.replacingOccurrences(of: #""criu_timeout_ns":45000000000,"#, with: "")
        #expect(old != json, "\(json)")
        #expect(try JSONLines.decodeOrError(EvictionPolicy.self, old).criuTimeoutNanos == 120_000_000_000)
    }

    @Test("a policy saved before evict_to loads whole, as a kill policy")
    func olderPolicyFileLoads() throws {
        var saved = EvictionPolicy()
        saved.maxSuspended = 3
        saved.compactAfterNanos = 9_000_000_000
        saved.onLockContention = .evict
        let current = JSONLines.encode(saved)
        let old = current.replacingOccurrences(of: #","evict_to":"kill""#, with: "")
        #expect(old != current && !old.contains("evict_to"), "\(old)")
        #expect(try JSONLines.decodeOrError(EvictionPolicy.self, old) == saved)

        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "icebox-evict-to-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("policy.json").path
        try old.write(toFile: file, atomically: true, encoding: .utf8)
        let loaded = EvictionPolicy.load(from: file)
        #expect(loaded.maxSuspended == 3 && loaded.compactAfterNanos == 9_000_000_000 && loaded.onLockContention == .evict)
        #expect(loaded.evictTo == .kill)
        // A value it does not know is no policy (the defaults), as for any other member.
        try current.replacingOccurrences(of: #""evict_to":"kill""#, with: #""evict_to":"swap""#).write(
            toFile: file, atomically: true, encoding: .utf8)
        #expect(EvictionPolicy.load(from: file) == EvictionPolicy())
    }
}

extension EvictionPolicy {
    /// Changes one setting from its text (the command line's form), as `icebox policy set` does.
    fileprivate mutating func set(_ key: String, _ value: String) throws(IceboxError) {
        apply(try PolicySetting.parse(key: key, value: value))
    }
}

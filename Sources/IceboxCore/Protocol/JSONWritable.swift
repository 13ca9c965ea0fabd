/// The hand-written JSON forms of the control replies and requests and of two single values
/// (records, events and summaries have `visitFields` instead). Each writes its members in the byte
/// order of their JSON keys (`.sortedKeys`), nil optionals left out, so the bytes are JSONEncoder's
/// (`JSONWriterTests`, whose every-field values catch a field added to a type and not here).

extension ReadyMode: JSONWritable {
    package func writeJSON(to w: inout JSONWriter) { w.string(description) }
}

extension NoticeSignal: JSONWritable {
    package func writeJSON(to w: inout JSONWriter) {
        switch self {
        case .auto: w.string("auto")
        case .none: w.string("none")
        case .signal(let n): w.string(String(n))  // the number as text, as the registry has always kept it
        }
    }
}

extension ControlReply: JSONWritable {
    package func writeJSON(to w: inout JSONWriter) {
        w.object { w in
            w.field("apps", apps)
            w.field("code", code)
            w.field("event", event)
            w.field("kind", kind)
            w.field(codable: "policy", policy)  // once a policy command: not worth a form of its own
            w.field("protocol_version", protocolVersion)
            w.field("reason", reason)
            w.field("summaries", summaries)
            w.field("text", text)
        }
    }
}

extension ControlRequest: JSONWritable {
    /// As Swift's synthesized coding of an enum writes it: `{"case":{"label":value,…}}`,
    /// `{}` for a case without a value.
    package func writeJSON(to w: inout JSONWriter) {
        w.object { w in
            switch self {
            case .ping: w.emptyObject("ping")
            case .version: w.emptyObject("version")
            case .launch(let options): w.member("launch") { $0.field("options", options) }
            case .ps(let all, let brief):
                w.member("ps") { w in
                    w.field("all", all)
                    w.field("brief", brief)
                }
            case .suspend(let names, let grace):
                w.member("suspend") { w in
                    w.field("grace_ns", grace)
                    w.field("names", names)
                }
            case .resume(let names, let waitReady):
                w.member("resume") { w in
                    w.field("names", names)
                    w.field("wait_ready", waitReady)
                }
            case .switchTo(let name): w.member("switch_to") { $0.field("name", name) }
            case .terminate(let names, let timeout):
                w.member("terminate") { w in
                    w.field("names", names)
                    w.field("timeout_ns", timeout)
                }
            case .evict(let names, let toDisk):
                w.member("evict") { w in
                    w.field("names", names)
                    w.field("to_disk", toDisk)
                }
            case .relaunch(let name): w.member("relaunch") { $0.field("name", name) }
            case .compact(let names, let mode):
                w.member("compact") { w in
                    w.field("mode", mode)
                    w.field("names", names)
                }
            case .policy: w.emptyObject("policy")
            case .setPolicy(let settings): w.member("set_policy") { $0.field(codable: "settings", settings) }
            case .stop(let terminateApps, let timeout):
                w.member("stop") { w in
                    w.field("terminate_apps", terminateApps)
                    w.field("timeout_ns", timeout)
                }
            case .forget(let names): w.member("forget") { $0.field("names", names) }
            case .metrics(let format): w.member("metrics") { $0.field("format", format) }
            case .adopt(let options): w.member("adopt") { $0.field(codable: "options", options) }
            case .release(let name): w.member("release") { $0.field("name", name) }
            }
        }
    }
}

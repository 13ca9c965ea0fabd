/// A type JSONReader can read from the plain form JSONWriter writes; nil for anything else,
/// which JSONDecoder then reads. `JSONLines.decode` and `decodeOrError` try it first.
package protocol JSONReadable: Decodable {
    init?(json r: inout JSONReader)
}

extension JSONReader {
    // One member's value into its variable. `null` leaves it nil, as decodeIfPresent does;
    // a member that may not be nil is checked once the object is read.
    mutating func field(_ target: inout String?) -> Bool { value(&target) { $0.string() } }
    mutating func field(_ target: inout Bool?) -> Bool { value(&target) { $0.bool() } }
    mutating func field(_ target: inout [String]?) -> Bool { value(&target) { $0.strings() } }
    mutating func field<N: FixedWidthInteger>(_ target: inout N?) -> Bool { value(&target) { $0.integer() } }
    mutating func field<N: FixedWidthInteger>(_ target: inout [N]?) -> Bool { value(&target) { $0.array { $0.integer() } } }
    mutating func field<R: JSONReadable>(_ target: inout R?) -> Bool { value(&target) { R(json: &$0) } }
    mutating func field<R: JSONReadable>(_ target: inout [R]?) -> Bool { value(&target) { $0.array { R(json: &$0) } } }
    mutating func field<E: RawRepresentable>(_ target: inout E?) -> Bool where E.RawValue == String {
        value(&target) { $0.raw() }
    }

    private mutating func value<T>(_ target: inout T?, _ read: (inout JSONReader) -> T?) -> Bool {
        if null() { return true }
        target = read(&self)
        return target != nil
    }
}

extension ReadyMode: JSONReadable {
    package init?(json r: inout JSONReader) {
        guard let mode = r.string().flatMap(ReadyMode.parse) else { return nil }
        self = mode
    }
}

extension NoticeSignal: JSONReadable {
    package init?(json r: inout JSONReader) {
        guard let signal = r.string().flatMap(NoticeSignal.init(stored:)) else { return nil }
        self = signal
    }
}

extension ControlReply: JSONReadable {
    /// The replies of `ps`, and the lines (with the event of their step) and ends of every
    /// command; one that carries a policy (a policy command: one at a time) is JSONDecoder's.
    package init?(json r: inout JSONReader) { self.init(json: &r, lineEvents: true) }

    /// `lineEvents` false: a `line` reply's `event` is passed over (a one-shot command prints
    /// only the line; decoding it was most of its JSON work). An `event` reply's event is still
    /// read, by the caller's fallback (`JSONLines.decode`).
    package init?(json r: inout JSONReader, lineEvents: Bool) {
        var apps: [AppRecord]?, code: Int32?, kind: Kind?, summaries: [AppSummary]?, text: String?, event: Event?
        var reason: IceboxError.Reason.Wire?
        var skipped = false
        let read = r.object { r, key in
            switch key {
            case "apps": return r.field(&apps)
            case "code": return r.field(&code)
            case "event":
                if lineEvents { return r.field(&event) }
                skipped = true
                return r.skipValue()
            case "kind": return r.field(&kind)
            case "reason": return r.field(&reason)
            case "summaries": return r.field(&summaries)
            case "text": return r.field(&text)
            default: return false
            }
        }
        guard read, let kind, !(skipped && kind == .event) else { return nil }
        self.init(kind: kind, text: text, code: code)
        self.apps = apps
        self.summaries = summaries
        self.reason = reason
        self.event = event
    }
}

extension ControlRequest: JSONReadable {
    /// The requests typed in a shell one after another (ps, suspend, resume, switch, evict, ping);
    /// the others, and any request in another form, are JSONDecoder's.
    package init?(json r: inout JSONReader) {
        var request: ControlRequest?
        let read = r.object { r, key in
            guard request == nil else { return false }  // one case a request
            switch key {
            case "ping":
                guard r.object({ _, _ in false }) else { return false }
                request = .ping
            case "ps":
                var all: Bool?, brief: Bool?
                let read = r.object { r, key in key == "all" ? r.field(&all) : key == "brief" && r.field(&brief) }
                guard read, let all, let brief else { return false }
                request = .ps(all: all, brief: brief)
            case "suspend":
                var names: [String]?, grace: UInt64?
                let read = r.object { r, key in key == "grace_ns" ? r.field(&grace) : key == "names" && r.field(&names) }
                guard read, let names else { return false }
                request = .suspend(names: names, graceNanos: grace)
            case "resume":
                var names: [String]?, waitReady: Bool?
                let read = r.object { r, key in key == "names" ? r.field(&names) : key == "wait_ready" && r.field(&waitReady) }
                guard read, let names, let waitReady else { return false }
                request = .resume(names: names, waitReady: waitReady)
            case "switch_to":
                var name: String?
                guard r.object({ r, key in key == "name" && r.field(&name) }), let name else { return false }
                request = .switchTo(name: name)
            case "evict":
                var names: [String]?, toDisk: Bool?
                let read = r.object { r, key in key == "names" ? r.field(&names) : key == "to_disk" && r.field(&toDisk) }
                guard read, let names else { return false }
                request = .evict(names: names, toDisk: toDisk ?? false)  // absent: the kill, as before to_disk
            default: return false
            }
            return true
        }
        guard read, let request else { return nil }
        self = request
    }
}

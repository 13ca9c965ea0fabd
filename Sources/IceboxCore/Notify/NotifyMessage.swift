/// One sd_notify datagram: newline-separated KEY=VALUE assignments, as systemd speaks it,
/// so `systemd-notify` and libsystemd's `sd_notify()` work unchanged.
package struct NotifyMessage: Equatable, Sendable {
    package var fields: [String: String]

    package static func parse(_ text: String) -> NotifyMessage {
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let eq = line.firstIndex(of: "=") else { continue }
            fields[String(line[..<eq])] = String(line[line.index(after: eq)...])
        }
        return NotifyMessage(fields: fields)
    }

    package var ready: Bool { fields["READY"] == "1" }
    /// WATCHDOG=1: the app is alive (sd_watchdog_enabled(3) told it to ping).
    package var watchdogPing: Bool { fields["WATCHDOG"] == "1" }
    /// WATCHDOG=trigger: the app asks to be treated as hung now.
    package var watchdogTrigger: Bool { fields["WATCHDOG"] == "trigger" }
    /// WATCHDOG_USEC=N: the app sets its own watchdog interval (saturating, as EXTEND_TIMEOUT_USEC).
    package var watchdogNanos: UInt64? { nanos(micros: "WATCHDOG_USEC") }
    package var stopping: Bool { fields["STOPPING"] == "1" }
    package var status: String? { fields["STATUS"] }
    /// EXTEND_TIMEOUT_USEC=N: the app asks for N more microseconds (beginBackgroundTask).
    package var extendNanos: UInt64? { nanos(micros: "EXTEND_TIMEOUT_USEC") }

    /// A field of microseconds, in ns. Saturating: a huge request means "as long as allowed"
    /// (--max-grace caps it), never a wrap.
    private func nanos(micros key: String) -> UInt64? {
        fields[key].flatMap { UInt64($0) }.map { $0.multipliedReportingOverflow(by: 1000).overflow ? .max : $0 * 1000 }
    }
}

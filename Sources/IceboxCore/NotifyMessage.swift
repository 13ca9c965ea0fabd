/// One sd_notify datagram: newline-separated KEY=VALUE assignments, as systemd speaks it,
/// so `systemd-notify` and libsystemd's `sd_notify()` work unchanged.
public struct NotifyMessage: Equatable, Sendable {
    public var fields: [String: String]

    public static func parse(_ text: String) -> NotifyMessage {
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let eq = line.firstIndex(of: "=") else { continue }
            fields[String(line[..<eq])] = String(line[line.index(after: eq)...])
        }
        return NotifyMessage(fields: fields)
    }

    public var ready: Bool { fields["READY"] == "1" }
    /// WATCHDOG=1: the app is alive (sd_watchdog_enabled(3) told it to ping).
    public var watchdogPing: Bool { fields["WATCHDOG"] == "1" }
    /// WATCHDOG=trigger: the app asks to be treated as hung now.
    public var watchdogTrigger: Bool { fields["WATCHDOG"] == "trigger" }
    /// WATCHDOG_USEC=N: the app sets its own watchdog interval (saturating, as EXTEND_TIMEOUT_USEC).
    public var watchdogNanos: UInt64? {
        fields["WATCHDOG_USEC"].flatMap { UInt64($0) }.map { $0.multipliedReportingOverflow(by: 1000).overflow ? .max : $0 * 1000 }
    }
    public var stopping: Bool { fields["STOPPING"] == "1" }
    public var status: String? { fields["STATUS"] }
    /// EXTEND_TIMEOUT_USEC=N: the app asks for N more microseconds (beginBackgroundTask).
    public var extendNanos: UInt64? {
        // Saturating: a huge request means "as long as allowed" (--max-grace caps it), never a wrap to a tiny value.
        fields["EXTEND_TIMEOUT_USEC"].flatMap { UInt64($0) }.map { $0.multipliedReportingOverflow(by: 1000).overflow ? .max : $0 * 1000 }
    }
}

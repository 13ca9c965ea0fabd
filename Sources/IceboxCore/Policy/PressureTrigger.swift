import Glibc
import IceboxSystem

/// Which PSI line a trigger watches: `some` (at least one task stalled on memory) or `full`
/// (every non-idle task stalled at once: the host is thrashing).
package enum PressureKind: String, Codable, Sendable {
    case some
    case full
}

/// A PSI trigger as people write it: `some 150ms/2s` fires when tasks were stalled for 150 ms in
/// total within any 2 s window.
package struct PressureSpec: Equatable, Sendable, CustomStringConvertible {
    package var kind: PressureKind
    package var stallNanos: UInt64
    package var windowNanos: UInt64

    /// Valid with or without CAP_SYS_RESOURCE (its window is 2 s).
    package static let defaultText = "some 150ms/2s"
    package static let `default` = PressureSpec(kind: .some, stallNanos: 150_000_000, windowNanos: 2_000_000_000)

    /// The kernel's limits on the window (kernel/sched/psi.c: WINDOW_MIN_US, WINDOW_MAX_US).
    package static let minimumWindowNanos: UInt64 = 500_000_000
    package static let maximumWindowNanos: UInt64 = 10_000_000_000
    /// Without CAP_SYS_RESOURCE the window must be a multiple of 2 s: such triggers ride on the
    /// kernel's 2 s averaging work instead of getting a real-time polling thread of their own.
    package static let unprivilegedWindowStepNanos: UInt64 = 2_000_000_000

    /// Parses and validates `<some|full> <stall>/<window>` (150ms, 2s, 500us: `DurationText`).
    /// `privileged`: whether the opener will have CAP_SYS_RESOURCE (the kernel checks); windows are
    /// checked here so the error can say why and what works, where the kernel only says EINVAL.
    package static func parse(_ text: String, privileged: Bool = Capabilities.hasEffective("cap_sys_resource") ?? false)
        throws(IceboxError) -> PressureSpec
    {
        func invalid(_ why: String, hint: String? = nil) -> IceboxError {
            IceboxError(.usage, "invalid pressure trigger \"\(text)\": \(why)", hint: hint ?? "write it as e.g. \"\(defaultText)\"")
        }
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard words.count == 2, let kind = PressureKind(rawValue: String(words[0])) else {
            throw invalid("expected \"some\" or \"full\", a space, then stall/window")
        }
        let parts = words[1].split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw invalid("expected stall/window after \"\(kind.rawValue)\"") }
        guard let stall = DurationText.parse(String(parts[0])) else { throw invalid("\"\(parts[0])\" is not a duration") }
        guard let window = DurationText.parse(String(parts[1])) else { throw invalid("\"\(parts[1])\" is not a duration") }
        let spec = PressureSpec(kind: kind, stallNanos: stall, windowNanos: window)
        if window < minimumWindowNanos || window > maximumWindowNanos {
            throw invalid(
                "the window must be between \(format(minimumWindowNanos)) and \(format(maximumWindowNanos))",
                hint: "try \"\(spec.withWindow(nearestValidWindow(window, privileged: privileged)))\"")
        }
        if !privileged && window % unprivilegedWindowStepNanos != 0 {
            throw invalid(
                "without CAP_SYS_RESOURCE the kernel only accepts windows that are a multiple of 2 s (2s, 4s, ... 10s)",
                hint: "try \"\(spec.withWindow(nearestValidWindow(window, privileged: false)))\"")
        }
        // The kernel counts in microseconds and wants a stall of at least 1 µs, within the window.
        if stall < 1_000 || stall > window {
            throw invalid("the stall must be at least 1us and at most the window (\(format(window)))")
        }
        return spec
    }

    /// The closest window the kernel accepts: clamped to its range and, without
    /// CAP_SYS_RESOURCE, rounded to the nearest multiple of 2 s (ties round up).
    package static func nearestValidWindow(_ window: UInt64, privileged: Bool) -> UInt64 {
        let clamped = min(max(window, minimumWindowNanos), maximumWindowNanos)
        if privileged { return clamped }
        let step = unprivilegedWindowStepNanos
        let rounded = (clamped + step / 2) / step * step
        return min(max(rounded, step), maximumWindowNanos)
    }

    func withWindow(_ window: UInt64) -> PressureSpec {
        PressureSpec(kind: kind, stallNanos: min(stallNanos, window), windowNanos: window)
    }

    /// What the kernel reads: "some 150000 2000000" (stall and window in µs).
    package var triggerText: String { "\(kind.rawValue) \(stallNanos / 1_000) \(windowNanos / 1_000)" }

    /// Back in the form people write: "some 150ms/2s".
    package var description: String { "\(kind.rawValue) \(Self.format(stallNanos))/\(Self.format(windowNanos))" }

    /// The largest unit that divides the value exactly, so the text parses back to the same value.
    static func format(_ nanos: UInt64) -> String {
        if nanos % 1_000_000_000 == 0 { return "\(nanos / 1_000_000_000)s" }
        if nanos % 1_000_000 == 0 { return "\(nanos / 1_000_000)ms" }
        if nanos % 1_000 == 0 { return "\(nanos / 1_000)us" }
        return "\(nanos)ns"
    }
}

/// The contents of a pressure file (/proc/pressure/memory, or a cgroup's memory.pressure):
/// share of time stalled over 10 s, 60 s and 300 s (percent), and the total stall in µs.
package struct PressureStats: Equatable, Sendable, Codable {
    package struct Line: Equatable, Sendable, Codable {
        package var avg10: Double
        package var avg60: Double
        package var avg300: Double
        package var totalMicros: UInt64
    }

    package var some: Line
    /// Absent from the system-wide cpu file before Linux 5.13; always there for memory.
    package var full: Line?
}

/// A PSI trigger: an open pressure file with a threshold written to it. The kernel signals POLLPRI
/// (at most once per window) when the stall crosses it, so the daemon's epoll loop watches it
/// (EPOLLPRI) instead of polling pressure. Closing the descriptor removes the trigger.
package final class PressureTrigger: Sendable {
    package let fd: Int32
    package let path: String
    package let spec: PressureSpec

    package static let systemMemory = "/proc/pressure/memory"
    /// The epoll events to register the descriptor for. EPOLLERR comes on its own when the
    /// pressure file goes away (its cgroup was removed).
    package static let epollEvents = EpollEvents.priority

    /// Opens `path` (the system file, or a cgroup's memory.pressure) and writes the trigger. EINVAL
    /// from the kernel means a spec it does not accept (see PressureSpec.parse); EBUSY cannot
    /// happen, as every trigger gets a descriptor of its own.
    package init(spec: PressureSpec = .default, path: String = PressureTrigger.systemMemory) throws(SystemError) {
        let fd = try systemCall("open", path: path) { open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC) }
        // The kernel overwrites the last byte written with a NUL before parsing, so the
        // terminating NUL must be part of the write or the window loses its last digit.
        let text = spec.triggerText
        let n = text.withCString { p in retryingOnInterrupt { write(fd, p, strlen(p) + 1) } }
        if n < 0 {
            let err = errno
            close(fd)
            throw systemCallError("write the PSI trigger \"\(text)\" to", path: path, errno: err)
        }
        self.fd = fd
        self.path = path
        self.spec = spec
    }

    deinit { close(fd) }

    package enum State: Equatable, Sendable {
        /// The threshold was not crossed (within the timeout).
        case quiet
        /// The threshold was crossed. Polling consumed the event: the next one comes with the next
        /// crossing.
        case crossed
        /// The pressure file is gone (its cgroup was removed): the trigger is dead.
        case gone
    }

    /// The current averages, read through the trigger's own descriptor.
    package func stats() throws(SystemError) -> PressureStats {
        guard let stats = Self.read(text: try FileIO.pread(fd: fd, path: path)) else {
            throw SystemError("parse", path: path, errno: EINVAL)
        }
        return stats
    }

    /// Parses `some avg10=0.00 avg60=0.00 avg300=0.00 total=123` and the `full` line. nil without a
    /// well-formed `some` line.
    package static func read(text: String) -> PressureStats? {
        var some: PressureStats.Line?
        var full: PressureStats.Line?
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ")
            guard let first = words.first, let parsed = parseLine(words.dropFirst()) else { continue }
            if first == "some" { some = parsed }
            if first == "full" { full = parsed }
        }
        return some.map { PressureStats(some: $0, full: full) }
    }

    static func parseLine(_ words: ArraySlice<Substring>) -> PressureStats.Line? {
        var values: [Substring: Substring] = [:]
        for word in words {
            let kv = word.split(separator: "=", maxSplits: 1)
            if kv.count == 2 { values[kv[0]] = kv[1] }
        }
        guard let avg10 = values["avg10"].flatMap({ Double($0) }), let avg60 = values["avg60"].flatMap({ Double($0) }),
            let avg300 = values["avg300"].flatMap({ Double($0) }), let total = values["total"].flatMap({ UInt64($0) })
        else { return nil }
        return PressureStats.Line(avg10: avg10, avg60: avg60, avg300: avg300, totalMicros: total)
    }
}

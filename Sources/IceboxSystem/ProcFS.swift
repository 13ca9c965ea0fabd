import Glibc

/// Parsers for /proc files. Each takes the file's text, so tests feed them temp files or strings;
/// the readers that take a pid are thin wrappers.
package enum ProcFS {
    /// The value of one "Key:\tvalue" line of /proc/PID/status.
    package static func statusField(_ name: String, in text: String) -> String? {
        if let found = asciiStatusField(name, in: text) { return found }
        for line in text.split(separator: "\n") where line.hasPrefix(name + ":") {
            return line.dropFirst(name.count + 1).trimmingCharacters(in: " \t")
        }
        return nil
    }

    /// The same search over bytes, for the text /proc gives (ASCII, no CR), where bytes and
    /// Characters agree (cheaper than splitting by Character). `.some(nil)` is "not there"; nil
    /// leaves other text to the search above.
    private static func asciiStatusField(_ name: String, in text: String) -> String?? {
        let key = Array(name.utf8) + [UInt8(ascii: ":")]
        var text = text
        return text.withUTF8 { bytes -> String?? in
            guard !key.contains(where: { $0 >= 0x80 || $0 == 0x0D || $0 == 0x0A }),
                !bytes.contains(where: { $0 >= 0x80 || $0 == 0x0D })
            else { return nil }
            var start = 0
            while start < bytes.count {
                let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
                if end - start >= key.count, bytes[start..<(start + key.count)].elementsEqual(key) {
                    var from = start + key.count, to = end
                    while from < to, bytes[from] == 0x20 || bytes[from] == 0x09 { from += 1 }
                    while to > from, bytes[to - 1] == 0x20 || bytes[to - 1] == 0x09 { to -= 1 }
                    return .some(String(decoding: UnsafeBufferPointer(rebasing: bytes[from..<to]), as: UTF8.self))
                }
                start = end + 1
            }
            return .some(nil)
        }
    }

    /// Whether bit `signal - 1` of a signal mask is set (signals 1 to 64).
    package static func maskHasSignal(_ mask: UInt64, _ signal: Int32) -> Bool {
        guard signal >= 1, signal <= 64 else { return false }
        return mask & (UInt64(1) << UInt64(signal - 1)) != 0
    }

    /// Whether the process has a handler installed (caught) for the signal: field 34 of
    /// /proc/PID/stat (sigcatch, the mask in decimal, one bit per signal from 1 to 64 on the 64-bit
    /// targets icebox builds for). /proc/PID/status says the same in SigCgt, but the kernel formats
    /// all of status (~1.4 KB) to answer: 19 µs against 11 µs for stat.
    package static func catchesSignal(pid: pid_t, _ signal: Int32, procRoot: String = "/proc") -> Bool {
        withStatLine("\(procRoot)/\(pid)/stat", sigcatch).map { maskHasSignal($0, signal) } ?? false
    }

    /// `catchesSignal` through a descriptor of /proc/PID/stat kept open (`caughtSignals(statFD:)`):
    /// false once the process it was opened for has gone, whoever has its pid by then.
    package static func catchesSignal(statFD fd: Int32, _ signal: Int32) -> Bool {
        caughtSignals(statFD: fd).map { maskHasSignal($0, signal) } ?? false
    }

    /// The sigcatch mask of /proc/PID/stat (field 34), from a descriptor of it kept open, read
    /// from offset 0: no open and close per look. nil when the field is not a decimal that fits
    /// 64 bits, or when the process is gone: the kept descriptor stays the process it was
    /// opened for, and once that one has exited, reads fail whoever has its pid by then.
    package static func caughtSignals(statFD fd: Int32) -> UInt64? { withStatLine(fd: fd, sigcatch) }

    /// The same from a stat line's text (for the parser's own tests and fuzzing).
    package static func caughtSignals(inStatLine text: String) -> UInt64? {
        var text = text
        return text.withUTF8 { line in fieldThree(in: line).flatMap { sigcatch(in: line, fieldThree: $0) } }
    }

    /// Field 34 of a stat line, as a decimal of 64 bits.
    private static func sigcatch(in line: UnsafeBufferPointer<UInt8>, fieldThree: Int) -> UInt64? {
        numericField(34, in: line, fieldThree: fieldThree)
    }

    /// Field `n` (after 3) of a stat line, n - 3 single spaces after field 3, as a decimal of
    /// 64 bits; nil when it is not one.
    private static func numericField(_ n: Int, in line: UnsafeBufferPointer<UInt8>, fieldThree: Int) -> UInt64? {
        var at = fieldThree, spaces = 0
        while at < line.count && spaces < n - 3 {
            if line[at] == UInt8(ascii: " ") { spaces += 1 }
            at += 1
        }
        return FileIO.parseCounter(UnsafeBufferPointer(rebasing: line[at...]))
    }

    /// A process's `StopStat` from one read of /proc/PID/stat: a process of one thread stopped
    /// is then confirmed with this read alone, where listing /proc/PID/task and reading the
    /// thread's stat took three path walks. nil when it is gone.
    package static func stopStat(pid: pid_t, procRoot: String = "/proc") -> StopStat? {
        withStatLine("\(procRoot)/\(pid)/stat", stopStat)
    }

    /// The same from a descriptor of /proc/PID/stat kept open (read at offset 0): nil once the
    /// process it was opened for is gone, whoever has its pid by then.
    package static func stopStat(statFD fd: Int32) -> StopStat? { withStatLine(fd: fd, stopStat) }

    /// The same from a stat line's text (for the parser's own tests).
    package static func stopStat(inStatLine text: String) -> StopStat? {
        var text = text
        return text.withUTF8 { line in fieldThree(in: line).flatMap { stopStat(in: line, fieldThree: $0) } }
    }

    /// Fields 3 (the state letter), 4 (the parent), 20 (the thread count) and 31 (the leader's
    /// own pending signals) of a stat line.
    private static func stopStat(in line: UnsafeBufferPointer<UInt8>, fieldThree: Int) -> StopStat? {
        guard let parent = numericField(4, in: line, fieldThree: fieldThree),
            let threads = numericField(20, in: line, fieldThree: fieldThree),
            let pending = numericField(31, in: line, fieldThree: fieldThree)
        else { return nil }
        return StopStat(
            state: stateLetter(in: line, fieldThree: fieldThree), ppid: pid_t(clamping: parent), threads: Int(clamping: threads),
            stopQueued: maskHasSignal(pending, SIGSTOP))
    }

    /// Field 3 of a stat line: the state letter.
    private static func stateLetter(in line: UnsafeBufferPointer<UInt8>, fieldThree: Int) -> Character {
        Character(Unicode.Scalar(line[fieldThree]))
    }

    /// Where field 3 of a stat line starts: after the last ")" and a space (the command
    /// name before it may hold spaces and parentheses); nil when the line has none.
    private static func fieldThree(in line: UnsafeBufferPointer<UInt8>) -> Int? {
        var close = line.count - 1
        while close >= 0 && line[close] != UInt8(ascii: ")") { close -= 1 }
        guard close >= 0, close + 2 < line.count, line[close + 1] == UInt8(ascii: " ") else { return nil }
        return close + 2
    }

    /// Reads a stat line (of a process or a thread) into a small stack buffer with one open
    /// and one read, and hands `body` the bytes and where field 3 starts. nil when the process
    /// is gone or the line is not one. `directory`: what a relative `path` starts from.
    private static func withStatLine<T>(_ path: String, in directory: Int32 = AT_FDCWD, _ body: (UnsafeBufferPointer<UInt8>, Int) -> T?)
        -> T?
    {
        let fd = retryingOnInterrupt { openat(directory, path, O_RDONLY | O_CLOEXEC) }
        if fd < 0 { return nil }
        defer { close(fd) }
        return withStatLine(fd: fd, body)
    }

    /// The same from an open descriptor, read with one pread at offset 0.
    private static func withStatLine<T>(fd: Int32, _ body: (UnsafeBufferPointer<UInt8>, Int) -> T?) -> T? {
        // 52 fields of at most 20 digits and a 16-byte name fit.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 2048) { buf -> T? in
            let n = retryingOnInterrupt { pread(fd, buf.baseAddress, buf.count, 0) }
            guard n > 0 else { return nil }
            let line = UnsafeBufferPointer(rebasing: buf[..<n])
            guard let three = fieldThree(in: line) else { return nil }
            return body(line, three)
        }
    }

    /// What a SIGSTOP freeze reads of a process from its stat line, parsed in place
    /// (`stopStat`): splitting the line into Strings cost twice what bare.c takes.
    package struct StopStat: Equatable, Sendable {
        /// The leader thread's state letter (field 3).
        package let state: Character
        package let ppid: pid_t  // field 4
        package let threads: Int  // field 20
        /// A SIGSTOP sent to the leader alone (tgkill) waits in its queue (field 31): not taken,
        /// as by a process stopped already.
        package let stopQueued: Bool
    }

    /// The fields of /proc/PID/stat after the command name (which may contain spaces and ")"), in
    /// the kernel's units.
    package struct Stat: Equatable, Sendable {
        package var state: Character
        package var ppid: pid_t
        package var pgrp: pid_t
        package var session: pid_t
        package var userTicks: UInt64
        package var systemTicks: UInt64
        package var startTimeTicks: UInt64
        package var residentPages: UInt64
    }

    /// The fields of a /proc/PID/stat line from field 3 (state) on: counted after the last ")",
    /// since the command name before it may hold spaces and parentheses. Field N is element N - 3.
    /// Every parser of stat lines starts here.
    package static func statFieldsAfterName(_ text: String) -> [Substring]? {
        guard let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }

    package static func parseStat(_ text: String) -> Stat? {
        guard let rest = statFieldsAfterName(text), rest.count > 21, let state = rest[0].first,
            let ppid = pid_t(rest[1]), let pgrp = pid_t(rest[2]), let session = pid_t(rest[3]),
            let user = UInt64(rest[11]), let system = UInt64(rest[12]), let start = UInt64(rest[19]), let rss = Int64(rest[21])
        else { return nil }
        return Stat(
            state: state, ppid: ppid, pgrp: pgrp, session: session, userTicks: user, systemTicks: system, startTimeTicks: start,
            residentPages: UInt64(max(rss, 0)))
    }

    package static func stat(pid: pid_t, procRoot: String = "/proc") -> Stat? {
        (try? FileIO.read("\(procRoot)/\(pid)/stat")).flatMap(parseStat)
    }

    /// How many threads a process has: procfs counts them in the link count of its task
    /// directory (two, plus one a thread), so one stat call answers. nil when it is gone.
    package static func threadCount(pid: pid_t, procRoot: String = "/proc") -> Int? {
        var st = Glibc.stat()
        guard lstat("\(procRoot)/\(pid)/task", &st) == 0, st.st_nlink > 2 else { return nil }
        return Int(st.st_nlink) - 2
    }

    /// The state letter of a process (`tid` nil) or of one of its threads, from its stat
    /// line read into a small buffer (`withStatLine`, as `StopStat`). nil when it is gone.
    package static func state(pid: pid_t, tid: pid_t? = nil, procRoot: String = "/proc") -> Character? {
        let path = tid.map { "\(procRoot)/\(pid)/task/\($0)/stat" } ?? "\(procRoot)/\(pid)/stat"
        return withStatLine(path, stateLetter)
    }

    /// A thread's state letter read through its process's task directory kept open
    /// (`TaskDirectory`): "TID/stat" from there. nil once the thread or its process is gone.
    package static func state(tid: pid_t, taskDirectory fd: Int32) -> Character? { withStatLine("\(tid)/stat", in: fd, stateLetter) }

    /// Whether a SIGSTOP waits to be taken by the thread (its own pending set, SigPnd, or
    /// its process's, ShdPnd, in /proc/PID/task/TID/status). A thread in the kernel (state D)
    /// with one pending stops before it runs a single instruction of its program again.
    package static func stopPending(pid: pid_t, tid: pid_t, procRoot: String = "/proc") -> Bool {
        guard let status = try? FileIO.read("\(procRoot)/\(pid)/task/\(tid)/status") else { return false }
        return ["SigPnd", "ShdPnd"].contains { key in
            statusField(key, in: status).flatMap { UInt64($0, radix: 16) }.map { maskHasSignal($0, SIGSTOP) } ?? false
        }
    }

    /// Where a thread sleeps in the kernel (/proc/PID/task/TID/wchan: a function name, "0"
    /// when it runs); empty when it cannot be read.
    package static func wchan(pid: pid_t, tid: pid_t, procRoot: String = "/proc") -> String {
        ((try? FileIO.read("\(procRoot)/\(pid)/task/\(tid)/wchan")) ?? "").trimmed()
    }

    package static func threads(of pid: pid_t, procRoot: String = "/proc") -> [pid_t] {
        ((try? FileIO.list("\(procRoot)/\(pid)/task")) ?? []).compactMap { pid_t($0) }
    }

    /// The children of a (single-threaded) process, from /proc/PID/task/PID/children.
    package static func children(of pid: pid_t, procRoot: String = "/proc") -> [pid_t] {
        ((try? FileIO.read("\(procRoot)/\(pid)/task/\(pid)/children")) ?? "").split(whereSeparator: { $0 == " " || $0 == "\n" })
            .compactMap { pid_t($0) }
    }

    /// Every pid whose process belongs to the session (the fallback when a process has no cgroup).
    package static func pids(inSession session: pid_t, procRoot: String = "/proc") -> [pid_t] {
        ((try? FileIO.list(procRoot)) ?? []).compactMap { pid_t($0) }.filter { stat(pid: $0, procRoot: procRoot)?.session == session }
    }

    /// The v2 cgroup path (relative to the v2 root) from /proc/PID/cgroup text ("0::/path").
    package static func unifiedCgroup(in text: String) -> String? {
        for line in text.split(separator: "\n") where line.hasPrefix("0::") {
            return String(line.dropFirst(3))
        }
        return nil
    }

    /// "18040 kB" → bytes; nil when that many bytes do not fit in a UInt64 (a trap before).
    package static func parseKiloBytes(_ text: String) -> UInt64? {
        guard let number = text.split(separator: " ").first.flatMap({ UInt64($0) }) else { return nil }
        let (bytes, overflow) = number.multipliedReportingOverflow(by: 1024)
        return overflow ? nil : bytes
    }
}

extension StringProtocol {
    /// The text without the given characters at either end.
    package func trimmingCharacters(in set: String) -> String {
        var s = self[...]
        while let f = s.first, set.contains(f) { s.removeFirst() }
        while let l = s.last, set.contains(l) { s.removeLast() }
        return String(s)
    }
}

extension String {
    package func trimmed() -> String { self[...].trimmingCharacters(in: " \t\n\r") }
}

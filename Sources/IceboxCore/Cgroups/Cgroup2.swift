import Glibc
import IceboxSystem

/// The keys of a cgroup v2 `cgroup.events` file ("populated 1\nfrozen 0\n").
package struct CgroupEvents: Equatable, Sendable {
    package var populated: Bool
    package var frozen: Bool

    /// "populated 1\nfrozen 0\n": a key and a value per line; other keys and malformed lines are
    /// skipped. Walked as bytes: it is read at every look of every freeze, and splitting it into
    /// substrings took ~8 µs of each `icebox suspend`.
    package static func parse(_ text: String) -> CgroupEvents {
        var e = CgroupEvents(populated: false, frozen: false)
        var text = text
        text.withUTF8 { bytes in
            var start = 0
            while start < bytes.count {
                let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
                let line = bytes[start..<end]
                start = end + 1
                guard let space = line.firstIndex(of: UInt8(ascii: " ")) else { continue }
                let key = line[..<space], value = line[(space + 1)...]
                guard value.count == 1, let digit = value.first, digit == UInt8(ascii: "0") || digit == UInt8(ascii: "1") else { continue }
                if key.elementsEqual("populated".utf8) { e.populated = digit == UInt8(ascii: "1") }
                if key.elementsEqual("frozen".utf8) { e.frozen = digit == UInt8(ascii: "1") }
            }
        }
        return e
    }
}

/// One cgroup v2 directory: its path, its files' paths, and helpers that name the path in errors.
package struct Cgroup2: CgroupDirectory, Equatable {
    package let path: String
    package static let what = "cgroup"

    package init(path: String) { self.path = path }

    package var supportsKill: Bool { FileIO.exists(file("cgroup.kill")) }

    var procsPath: String { file("cgroup.procs") }
    var eventsPath: String { file("cgroup.events") }
    var freezePath: String { file("cgroup.freeze") }

    package func setFrozen(_ frozen: Bool) throws(SystemError) {
        try FileIO.write(freezePath, frozen ? "1" : "0")
    }

    /// Kills every process in the cgroup at once (Linux 5.14); works on frozen ones too.
    package func kill() throws(SystemError) {
        try FileIO.write(file("cgroup.kill"), "1")
    }

    package func openDirectory() throws(SystemError) -> Int32 {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd < 0 { throw SystemError("open cgroup", path: path) }
        return fd
    }

    /// Waits until cgroup.events satisfies `condition` or the deadline (monotonic ns) passes
    /// (`Stepping.run`): woken by POLLPRI, and re-read on the `Backoff` schedule too, as a
    /// notification right after another event (a spawn, say) comes up to 10 ms late. Returns the
    /// last state read and whether it held.
    package func waitForEvents(until deadline: UInt64, _ condition: (CgroupEvents) -> Bool)
        throws(SystemError) -> (events: CgroupEvents, satisfied: Bool)
    {
        let path = eventsPath
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { throw SystemError("open", path: path) }
        defer { close(fd) }
        var backoff = Backoff(cap: 10_000_000)
        func look(_ now: UInt64) -> EventsLook {
            let state: CgroupEvents
            do { state = CgroupEvents.parse(try FileIO.pread(fd: fd, path: path)) } catch { return .failed(error) }
            let held = condition(state)
            if held || now >= deadline { return .done(state, satisfied: held) }
            return .waiting(recheckAt: backoff.next(afterLookAt: now, deadline: deadline), watch: fd)
        }
        switch Stepping.run(from: look(Clock.monotonicNanos()), step: look) {
        case .done(let state, let satisfied): return (state, satisfied)
        case .failed(let error): throw error
        case .waiting: preconditionFailure("Stepping.run returned a wait still pending")
        }
    }
}

/// One look of `Cgroup2.waitForEvents`, for `Stepping.run`.
private enum EventsLook: StepProgress {
    case done(CgroupEvents, satisfied: Bool)
    case failed(SystemError)
    case waiting(recheckAt: UInt64, watch: Int32)

    var pending: (recheckAt: UInt64, watch: Int32?)? {
        if case .waiting(let recheckAt, let watch) = self { (recheckAt, watch) } else { nil }
    }
}

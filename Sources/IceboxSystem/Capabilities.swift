import CLibcap
import Glibc

/// The capabilities this process has, read and lowered with libcap. Capabilities belong to
/// a thread in the kernel: `keepOnly` changes the calling thread's (and what the threads
/// and children it starts later inherit), so it is called before any other thread exists.
package enum Capabilities {
    /// Whether the named capability (e.g. "cap_sys_admin") is in the effective set.
    package static func hasEffective(_ name: String) -> Bool? { has(name, in: CAP_EFFECTIVE) }

    /// Whether the named capability is in the permitted set (it can be raised to effective).
    package static func hasPermitted(_ name: String) -> Bool? { has(name, in: CAP_PERMITTED) }

    /// Whether the named capability is in one of this thread's sets; nil if libcap cannot say.
    private static func has(_ name: String, in set: cap_flag_t) -> Bool? {
        var value: cap_value_t = 0
        guard cap_from_name(name, &value) == 0, let caps = cap_get_proc() else { return nil }
        defer { cap_free(UnsafeMutableRawPointer(caps)) }
        var flag: cap_flag_value_t = CAP_CLEAR
        guard cap_get_flag(caps, value, set, &flag) == 0 else { return nil }
        return flag == CAP_SET
    }

    /// Runs `body` with the named capability raised into the calling thread's effective set (from
    /// its permitted set), and lowers it again after, unless it was effective already. The daemon
    /// keeps CAP_SYS_ADMIN permitted but not effective, and raises it only around the clone3 of a
    /// --pid-namespace launch (CLONE_NEWPID needs it), so the rest of the daemon runs without it. A
    /// capability that cannot be raised (not permitted) is left alone: the body's system call then
    /// fails as it would have.
    package static func withEffective<T, E: Error>(_ name: String, _ body: () throws(E) -> T) throws(E) -> T {
        let raised = setEffective(name, true)
        defer { if raised { _ = setEffective(name, false) } }
        return try body()
    }

    /// Sets or clears one capability in the calling thread's effective set; true if it changed.
    private static func setEffective(_ name: String, _ on: Bool) -> Bool {
        var value: cap_value_t = 0
        guard cap_from_name(name, &value) == 0, let caps = cap_get_proc() else { return false }
        defer { cap_free(UnsafeMutableRawPointer(caps)) }
        var flag: cap_flag_value_t = CAP_CLEAR
        guard cap_get_flag(caps, value, CAP_EFFECTIVE, &flag) == 0, (flag == CAP_SET) != on else { return false }
        var list = [value]
        guard cap_set_flag(caps, CAP_EFFECTIVE, 1, &list, on ? CAP_SET : CAP_CLEAR) == 0 else { return false }
        return cap_set_proc(caps) == 0
    }

    /// The effective set in libcap's text form, e.g. "=ep cap_sys_resource-ep".
    package static func effectiveText() -> String? {
        guard let caps = cap_get_proc() else { return nil }
        defer { cap_free(UnsafeMutableRawPointer(caps)) }
        guard let text = cap_to_text(caps, nil) else { return nil }
        defer { cap_free(UnsafeMutableRawPointer(text)) }
        return String(cString: text)
    }

    /// The highest capability number this kernel knows (/proc/sys/kernel/cap_last_cap; else what
    /// libcap found by asking the kernel). A spawn as another user drops each one, up to this, from
    /// the bounding set.
    package static let lastCap: Int32 = {
        if let text = try? FileIO.read("/proc/sys/kernel/cap_last_cap"), let n = Int32(text.trimmed()), n >= 0 { return n }
        return Int32(cap_max_bits()) - 1
    }()

    /// The name of every capability this kernel knows, in number order ("cap_chown", ...).
    package static var allNames: [String] {
        (0...lastCap).map { value in
            guard let text = cap_to_name(cap_value_t(value)) else { return "cap_\(value)" }
            defer { cap_free(UnsafeMutableRawPointer(text)) }
            return String(cString: text)
        }
    }

    /// Takes every capability not in `names` out of the calling thread's permitted and effective
    /// sets, and empties its inheritable set; the bounding set is left alone (an app launched as
    /// root gets root's capabilities back at its execve). Returns the names that were permitted and
    /// are now gone. Throws if libcap or the kernel refuses. Those in `permittedOnly` (a subset of
    /// `names`) stay permitted but leave the effective set (`withEffective` raises them).
    package static func keepOnly(_ names: Set<String>, permittedOnly: Set<String> = []) throws(SystemError) -> [String] {
        guard let caps = cap_get_proc() else { throw SystemError("read this process's capabilities (cap_get_proc)") }
        defer { cap_free(UnsafeMutableRawPointer(caps)) }
        var dropped: [String] = []
        for (value, name) in allNames.enumerated() {
            var list = [cap_value_t(value)]
            if permittedOnly.contains(name) {
                if cap_set_flag(caps, CAP_EFFECTIVE, 1, &list, CAP_CLEAR) != 0 { throw SystemError("clear \(name) (cap_set_flag)") }
                continue
            }
            guard !names.contains(name) else { continue }
            var flag: cap_flag_value_t = CAP_CLEAR
            guard cap_get_flag(caps, list[0], CAP_PERMITTED, &flag) == 0 else { continue }
            if flag == CAP_SET { dropped.append(name) }
            for set in [CAP_PERMITTED, CAP_EFFECTIVE] {
                if cap_set_flag(caps, set, 1, &list, CAP_CLEAR) != 0 { throw SystemError("clear \(name) (cap_set_flag)") }
            }
        }
        if cap_clear_flag(caps, CAP_INHERITABLE) != 0 { throw SystemError("clear the inheritable set (cap_clear_flag)") }
        if cap_set_proc(caps) != 0 { throw SystemError("drop capabilities (cap_set_proc)") }
        return dropped
    }
}

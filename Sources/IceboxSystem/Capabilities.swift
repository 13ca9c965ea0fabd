import CLibcap
import Glibc

/// The capabilities this process has, read with libcap (`cap_get_proc`).
public enum Capabilities {
    /// Whether the named capability (e.g. "cap_sys_admin") is in the effective set.
    public static func hasEffective(_ name: String) -> Bool? {
        var value: cap_value_t = 0
        guard cap_from_name(name, &value) == 0, let caps = cap_get_proc() else { return nil }
        defer { cap_free(UnsafeMutableRawPointer(caps)) }
        var flag: cap_flag_value_t = CAP_CLEAR
        guard cap_get_flag(caps, value, CAP_EFFECTIVE, &flag) == 0 else { return nil }
        return flag == CAP_SET
    }

    /// The effective set in libcap's text form, e.g. "=ep cap_sys_resource-ep".
    public static func effectiveText() -> String? {
        guard let caps = cap_get_proc() else { return nil }
        defer { cap_free(UnsafeMutableRawPointer(caps)) }
        guard let text = cap_to_text(caps, nil) else { return nil }
        defer { cap_free(UnsafeMutableRawPointer(text)) }
        return String(cString: text)
    }
}

/// App names become cgroup directory names, socket names and log file names, so they are
/// restricted to `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`.
public enum AppName {
    public static func validate(_ name: String) throws(IceboxError) {
        let bytes = Array(name.utf8)
        func alnum(_ b: UInt8) -> Bool { (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) }
        let ok =
            !bytes.isEmpty && bytes.count <= 64 && alnum(bytes[0])
            && bytes.allSatisfy { alnum($0) || $0 == 46 || $0 == 95 || $0 == 45 }
        if !ok {
            throw IceboxError(
                .usage, "invalid app name '\(name)'",
                hint: "use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")
        }
    }

    /// A valid name derived from a command: its base name with anything else replaced by '-'.
    public static func derived(fromCommand command: String) -> String {
        let base = command.split(separator: "/").last.map(String.init) ?? "app"
        var out = ""
        for ch in base.unicodeScalars {
            let ok = (ch.value < 128) && (ch.properties.isAlphabetic || ("0"..."9").contains(ch) || ch == "." || ch == "_" || ch == "-")
            out.unicodeScalars.append(ok ? ch : "-")
        }
        while let f = out.first, f == "." || f == "-" || f == "_" { out.removeFirst() }
        if out.isEmpty { out = "app" }
        return String(out.prefix(56))
    }
}

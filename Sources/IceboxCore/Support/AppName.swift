/// App names become cgroup directory names, socket names and log file names, so they are
/// restricted to `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`.
package enum AppName {
    package static func validate(_ name: String) throws(IceboxError) {
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

    /// Checks a name for a new app: valid, and not a cgroup control file's name. The app's cgroups
    /// are directories named after it beside such files: `mkdir <root>/tasks` fails with EEXIST in
    /// every v1 hierarchy, and an app called `memory.high` or `cgroup.procs` would be a file in v2.
    /// Names that only refer to an app (suspend, ps, log) keep `validate`, so an app an older
    /// icebox launched under such a name can still be named.
    package static func validateForLaunch(_ name: String) throws(IceboxError) {
        try validate(name)
        if let file = cgroupFileCollision(name) {
            throw IceboxError(
                .usage, "app name '\(name)' cannot be used: \(file), and the app's cgroup directory would be made beside it",
                hint: "choose another name, such as '\(avoidingCgroupFiles(name))'")
        }
    }

    /// The interface files every cgroup directory has in v1 (`tasks`, `notify_on_release`,
    /// and `release_agent` at a hierarchy's root) without a controller prefix.
    static let cgroupV1Files: Set<String> = ["tasks", "notify_on_release", "release_agent"]

    /// Controllers (v1 and v2) whose files are named `<controller>.<file>`; `cgroup.` is the
    /// core's own prefix (v1 and v2), `irq.` the v2 root's pressure file.
    static let controllerPrefixes: Set<String> = [
        "cgroup", "memory", "memsw", "cpu", "cpuacct", "cpuset", "freezer", "io", "pids", "hugetlb", "rdma", "misc", "dmem",
        "blkio", "net_cls", "net_prio", "devices", "perf_event", "debug", "irq",
    ]

    /// Why `name` is, or may be, a cgroup control file's name; nil when it is not.
    package static func cgroupFileCollision(_ name: String) -> String? {
        if cgroupV1Files.contains(name) { return "it is the name of a control file in every v1 cgroup" }
        if let dot = name.firstIndex(of: "."), controllerPrefixes.contains(String(name[..<dot])) {
            return "names starting '\(name[..<dot]).' are the cgroup \(name[..<dot] == "cgroup" ? "core's" : "controller's") control files"
        }
        return nil
    }

    /// `name`, or one like it that is no cgroup control file's: dots made dashes, then "-app"
    /// added if that is not enough ("memory.sh" → "memory-sh", "tasks" → "tasks-app").
    static func avoidingCgroupFiles(_ name: String) -> String {
        guard cgroupFileCollision(name) != nil else { return name }
        let dashed = String(name.map { $0 == "." ? "-" : $0 })
        return cgroupFileCollision(dashed) == nil ? dashed : String(dashed.prefix(60)) + "-app"
    }

    /// A valid name derived from a command: its base name with anything else replaced by '-'.
    package static func derived(fromCommand command: String) -> String {
        let base = command.split(separator: "/").last.map(String.init) ?? "app"
        var out = ""
        for ch in base.unicodeScalars {
            let ok = (ch.value < 128) && (ch.properties.isAlphabetic || ("0"..."9").contains(ch) || ch == "." || ch == "_" || ch == "-")
            out.unicodeScalars.append(ok ? ch : "-")
        }
        while let f = out.first, f == "." || f == "-" || f == "_" { out.removeFirst() }
        if out.isEmpty { out = "app" }
        out = String(out.prefix(56))
        // `icebox run tasks` or `run memory.sh`: not a cgroup control file's name.
        return avoidingCgroupFiles(out)
    }
}

import Testing

@testable import IceboxCore

@Suite("AppName")
struct AppNameTests {
    @Test(arguments: ["web", "a", "web-2", "my.app_1", "9lives", "A.B", String(repeating: "x", count: 64)])
    func validNames(_ name: String) throws {
        try AppName.validate(name)
    }

    @Test(arguments: ["", "-x", ".x", "_x", "a b", "a/b", String(repeating: "x", count: 65), "é", "café", "web!", "a\n", "..", "a:b"])
    func invalidNamesAreUsageErrors(_ name: String) {
        #expect {
            try AppName.validate(name)
        } throws: { error in
            guard let e = error as? IceboxError else { return false }
            return e.code == .usage && e.message.contains("invalid app name") && e.hint != nil
        }
    }

    @Test func derivedNameIsTheBaseName() {
        #expect(AppName.derived(fromCommand: "/usr/bin/python3") == "python3")
        #expect(AppName.derived(fromCommand: "sleep") == "sleep")
        #expect(AppName.derived(fromCommand: "node_modules/.bin/vite") == "vite")
    }

    @Test func derivedNameReplacesOtherCharacters() throws {
        let name = AppName.derived(fromCommand: "./my server")
        #expect(name == "my-server")
        try AppName.validate(name)
    }

    @Test(arguments: [
        "./my server", ".hidden", "-dash", "/", "", "...", "é", "ünïcödé app", "a+b=c",
        String(repeating: "long", count: 30), "/opt/My App (x86)/run.sh", "__init__",
    ])
    func derivedNamesAlwaysValidate(_ command: String) throws {
        let name = AppName.derived(fromCommand: command)
        try AppName.validate(name)
        #expect(name.count <= 56)
    }

    @Test func derivedNameFallsBackToApp() {
        #expect(AppName.derived(fromCommand: "/") == "app")
        #expect(AppName.derived(fromCommand: "") == "app")
        #expect(AppName.derived(fromCommand: "...") == "app")
        #expect(AppName.derived(fromCommand: ".hidden") == "hidden")
    }

    @Test func derivedNameIsCappedAt56Characters() {
        #expect(AppName.derived(fromCommand: String(repeating: "a", count: 100)) == String(repeating: "a", count: 56))
    }

    /// Names that are cgroup control files' (v1 and v2): the app's cgroup directory would be
    /// made beside that file (`mkdir <root>/tasks` fails with EEXIST in a v1 hierarchy).
    @Test(arguments: [
        "tasks", "notify_on_release", "release_agent", "cgroup.procs", "cgroup.events", "cgroup.anything", "memory.force_empty",
        "memory.high", "cpu.max", "cpuset.cpus", "freezer.state", "io.pressure", "pids.max", "hugetlb.2MB.max", "rdma.max",
        "misc.max", "blkio.weight", "net_cls.classid", "net_prio.ifpriomap", "devices.allow", "perf_event.x", "irq.pressure",
        "cpuacct.usage", "memsw.x", "debug.x", "dmem.max",
    ])
    func cgroupFileNamesAreRefusedForLaunch(_ name: String) throws {
        try AppName.validate(name)  // still names an app (one launched by an older icebox)
        #expect {
            try AppName.validateForLaunch(name)
        } throws: { error in
            guard let e = error as? IceboxError else { return false }
            return e.code == .usage && e.message.contains("app name '\(name)' cannot be used") && e.message.contains("cgroup")
                && (e.hint ?? "").contains("choose another name")
        }
    }

    @Test(arguments: ["web", "tasks2", "my-tasks", "memory", "cpu", "memoryhog.py", "cgroup", "cgroups.x", "web.memory.high", "Tasks"])
    func namesLikeButNotCgroupFilesLaunch(_ name: String) throws {
        try AppName.validateForLaunch(name)
    }

    @Test func suggestedAndDerivedNamesAvoidCgroupFiles() throws {
        #expect(AppName.derived(fromCommand: "/usr/bin/tasks") == "tasks-app")
        #expect(AppName.derived(fromCommand: "./memory.sh") == "memory-sh")
        #expect(AppName.derived(fromCommand: "cgroup.procs") == "cgroup-procs")
        for name in ["tasks", "memory.force_empty", "notify_on_release"] {
            let suggested = AppName.avoidingCgroupFiles(name)
            try AppName.validateForLaunch(suggested)
        }
    }
}

import Foundation
import Glibc
import Testing

/// scripts/install and scripts/uninstall into a temporary prefix, with the built binary
/// (ICEBOX_BIN), checked with the tools that must find what they put there.
@Suite(.timeLimit(.minutes(5)))
struct InstallTests {
    static var missingTools: String? {
        let missing =
            ["man", "bash", "zsh", "fish"].filter { ShellHarness.which($0) == nil }
            + (FileManager.default.fileExists(atPath: "/usr/share/bash-completion/bash_completion") ? [] : ["bash-completion"])
        return missing.isEmpty ? nil : ShellHarness.missing(missing.joined(separator: ", "))
    }

    func temporaryDirectory() -> String { Sandbox.temporaryDirectory("icebox-install") }

    func contents(_ dir: String) -> [String] {
        (FileManager.default.enumerator(atPath: dir)?.allObjects as? [String] ?? []).sorted()
    }

    @Test(
        "install puts the binary, man page and completions where man, bash-completion, zsh and fish find them; uninstall removes them all",
        .enabled(if: missingTools == nil, "\(missingTools ?? "")"))
    func installAndUninstall() throws {
        let prefix = temporaryDirectory()
        let scratch = temporaryDirectory()
        defer {
            try? FileManager.default.removeItem(atPath: prefix)
            try? FileManager.default.removeItem(atPath: scratch)
        }
        var env = ProcessInfo.processInfo.environment
        env["ICEBOX_BIN"] = Sandbox.binary
        let installed = try ShellHarness.run([ShellHarness.root + "/scripts/install", "--prefix", prefix], environment: env)
        #expect(installed.status == 0, "\(installed.output)")
        let files = [
            "bin/icebox", "share/man/man1/icebox.1", "share/bash-completion/completions/icebox", "share/zsh/site-functions/_icebox",
            "share/fish/vendor_completions.d/icebox.fish",
        ]
        for f in files { #expect(FileManager.default.fileExists(atPath: prefix + "/" + f), "\(f) is missing") }
        #expect(FileManager.default.isExecutableFile(atPath: prefix + "/bin/icebox"))
        // Copied with one write (scripts/lib/setup.sh, icebox_write_whole): every byte, no temporary left beside it.
        #expect(
            FileManager.default.contentsEqual(atPath: prefix + "/bin/icebox", andPath: Sandbox.binary),
            "bin/icebox differs from \(Sandbox.binary)")
        #expect(!FileManager.default.fileExists(atPath: prefix + "/bin/icebox.new"))
        let manifest = try String(contentsOfFile: prefix + "/share/icebox/install-manifest", encoding: .utf8)
        #expect(
            manifest.split(separator: "\n").filter { $0.hasPrefix("file ") }.map { String($0.dropFirst(5)) }.sorted()
                == files.map { prefix + "/" + $0 }.sorted())

        // man finds the page through MANPATH (and -M), and shows its NAME line.
        var manEnv = env
        manEnv["MANPATH"] = prefix + "/share/man"
        manEnv["MANPAGER"] = "cat"
        manEnv["MANWIDTH"] = "80"
        manEnv["LC_ALL"] = "C"
        let path = try ShellHarness.run(["man", "-w", "icebox"], environment: manEnv)
        #expect(path.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == prefix + "/share/man/man1/icebox.1", "\(path.output)")
        let page = try ShellHarness.run(["man", "-M", prefix + "/share/man", "icebox"], environment: manEnv)
        let text = page.stdout.split(whereSeparator: { $0 == " " || $0 == "\n" }).joined(separator: " ")
        #expect(text.contains("NAME icebox - the mobile app lifecycle"), "\(page.output.prefix(400))")

        // Each shell loads the completion from where it was put.
        var shellEnv = env
        shellEnv["PATH"] = prefix + "/bin:" + (env["PATH"] ?? "/usr/bin:/bin")
        shellEnv["XDG_DATA_DIRS"] = prefix + "/share"
        let bash = try ShellHarness.run(
            ["bash", "-c", "source /usr/share/bash-completion/bash_completion; __load_completion icebox && complete -p icebox"],
            environment: shellEnv)
        #expect(bash.stdout.contains("-F _icebox icebox"), "\(bash.output)")
        let zsh = try ShellHarness.run(
            [
                "zsh", "-f", "-c",
                "fpath=(\(prefix)/share/zsh/site-functions $fpath); autoload -U compinit; compinit -u -d \(scratch)/zcompdump; print -r -- $_comps[icebox]",
            ], environment: shellEnv)
        #expect(zsh.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "_icebox", "\(zsh.output)")
        // fish reads XDG_DATA_DIRS in its own config.fish; HOME keeps the user's out.
        var fishEnv = shellEnv
        fishEnv["HOME"] = scratch
        fishEnv["XDG_CONFIG_HOME"] = scratch
        let fish = try ShellHarness.run(["fish", "-c", "complete -C 'icebox sus'"], environment: fishEnv)
        #expect(fish.stdout.hasPrefix("suspend\t"), "\(fish.output)")

        let removed = try ShellHarness.run([ShellHarness.root + "/scripts/uninstall", "--prefix", prefix], environment: env)
        #expect(removed.status == 0, "\(removed.output)")
        #expect(contents(prefix) == [], "uninstall leaves the prefix as it found it")
        let again = try ShellHarness.run([ShellHarness.root + "/scripts/uninstall", "--prefix", prefix], environment: env)
        #expect(again.status == 1 && again.stderr.contains("nothing to remove"))
    }

    @Test("uninstall keeps directories that were there before, and what others put in them")
    func keepsWhatWasThere() throws {
        let prefix = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: prefix) }
        try FileManager.default.createDirectory(atPath: prefix + "/share/man/man1", withIntermediateDirectories: true)
        try "other\n".write(toFile: prefix + "/share/man/man1/other.1", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: prefix + "/bin", withIntermediateDirectories: true)
        var env = ProcessInfo.processInfo.environment
        env["ICEBOX_BIN"] = Sandbox.binary
        #expect(try ShellHarness.run([ShellHarness.root + "/scripts/install", "--prefix", prefix], environment: env).status == 0)
        // Installing twice keeps one manifest that still knows which directories were new.
        #expect(try ShellHarness.run([ShellHarness.root + "/scripts/install", "--prefix", prefix], environment: env).status == 0)
        #expect(try ShellHarness.run([ShellHarness.root + "/scripts/uninstall", "--prefix", prefix], environment: env).status == 0)
        #expect(contents(prefix) == ["bin", "share", "share/man", "share/man/man1", "share/man/man1/other.1"])
        #expect(try ShellHarness.run([ShellHarness.root + "/scripts/install", "--bogus"], environment: env).status == 64)
    }

    /// The test-only packages: scripts/test installs them, scripts/icebox (and so the demo)
    /// must not (a newcomer's `scripts/icebox demo` installed zsh and fish).
    static let testOnlyPackages = [
        "systemd", "util-linux", "groff", "bash-completion", "zsh", "fish", "man-db", "libnss-extrausers", "python3-prometheus-client",
        "tmux", "strace", "gdb",
    ]

    /// Runs SCRIPT in bash with scripts/lib/setup.sh sourced from a copy of it in `tree` (so
    /// ICEBOX_ROOT is `tree`), a fresh machine's answers (nothing installed, root) and apt-get
    /// and swift as shell functions that only record their arguments: nothing is installed
    /// or built for real.
    func setup(_ tree: String, _ script: String) throws -> Sandbox.Result {
        let prelude = """
            set -euo pipefail
            unset ICEBOX_BIN
            source "$TREE/scripts/lib/setup.sh"
            icebox_has() { return 1; }
            id() { echo 0; }
            apt-get() { echo "$*" >>"$TREE/apt-get.log"; }
            swift() { mkdir -p .build/release && printf '#!/bin/sh\\n' >.build/release/icebox && chmod 755 .build/release/icebox; }

            """
        var env = ProcessInfo.processInfo.environment
        env["TREE"] = tree
        return try ShellHarness.run(["bash", "-c", prelude + script], environment: env)
    }

    @Test("scripts/icebox installs what icebox needs and no test-only package, scripts/test the tests' too; each step says so on stderr")
    func dependenciesAndProgressLines() throws {
        let tree = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: tree) }
        try FileManager.default.createDirectory(atPath: tree + "/scripts/lib", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: tree + "/Sources", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: ShellHarness.root + "/scripts/lib/setup.sh", toPath: tree + "/scripts/lib/setup.sh")
        try "".write(toFile: tree + "/Sources/a.swift", atomically: true, encoding: .utf8)
        try "".write(toFile: tree + "/Package.swift", atomically: true, encoding: .utf8)
        let aptLog = tree + "/apt-get.log"
        func installed() throws -> [String] {
            let lines = try String(contentsOfFile: aptLog, encoding: .utf8).split(separator: "\n")
            try FileManager.default.removeItem(atPath: aptLog)
            #expect(lines.first == "update -qq", "\(lines)")
            return lines.last?.split(separator: " ").map(String.init).filter { !$0.hasPrefix("-") && $0 != "install" } ?? []
        }

        // What scripts/icebox and the benchmarks run: icebox's own packages, said before apt runs.
        let runtime = try setup(tree, "icebox_install_dependencies")
        #expect(runtime.status == 0, "\(runtime.output)")
        let needed = try installed()
        #expect(Set(needed) == ["libcap-dev", "pkg-config", "python3"], "\(needed)")
        #expect(Set(needed).isDisjoint(with: Self.testOnlyPackages))
        let said = runtime.stderr.split(separator: "\n").map(String.init)
        #expect(said.first == "icebox: installing Debian packages to build and run icebox: \(needed.joined(separator: " "))", "\(said)")
        #expect(said.contains("icebox: apt-get update (the package lists)..."), "\(said)")
        #expect(said.contains("icebox: apt-get install \(needed.joined(separator: " "))..."), "\(said)")
        #expect(said.last?.hasPrefix("icebox: installed \(needed.joined(separator: " ")) in ") == true, "\(said)")
        // scripts/icebox and scripts/test run it as that.
        let iceboxScript = try String(contentsOfFile: ShellHarness.root + "/scripts/icebox", encoding: .utf8)
        #expect(iceboxScript.contains("\nicebox_install_dependencies\n"))
        let testScript = try String(contentsOfFile: ShellHarness.root + "/scripts/test", encoding: .utf8)
        #expect(testScript.contains("\nicebox_install_dependencies --tests\n"))

        // What scripts/test runs: the tests' packages too.
        let tests = try setup(tree, "icebox_install_dependencies --tests")
        #expect(tests.status == 0, "\(tests.output)")
        #expect(Set(try installed()) == Set(needed + Self.testOnlyPackages))

        // The build: said the first time, with how long it takes, and when sources changed;
        // an up-to-date build says nothing.
        let first = try setup(tree, "icebox_build_release")
        #expect(first.status == 0, "\(first.output)")
        #expect(first.stderr.contains("icebox: building the release binary .build/release/icebox"), "\(first.output)")
        #expect(first.stderr.contains("about 2 minutes the first time"), "\(first.output)")
        #expect(first.stderr.contains("icebox: built .build/release/icebox in "), "\(first.output)")
        let again = try setup(tree, "icebox_build_release")
        #expect(again.status == 0 && again.stderr.isEmpty, "\(again.output)")
        let later = try setup(tree, "touch -d @$(($(date +%s) + 60)) \"$TREE/Sources/a.swift\"; icebox_build_release")
        #expect(later.stderr.contains("icebox: rebuilding the release binary"), "\(later.output)")
    }
}

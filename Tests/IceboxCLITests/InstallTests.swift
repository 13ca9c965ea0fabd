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
}

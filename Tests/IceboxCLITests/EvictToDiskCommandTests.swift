import Foundation
import Glibc
import IceboxCore
import Testing

@testable import IceboxCLI

/// `icebox evict --to-disk` and `--evict-to` as the parser takes them: the request built,
/// and mistakes refused with 64 before anything is sent.
@Suite("Evict to disk: the command line")
struct EvictToDiskArgumentsTests {
    @Test func evictToDiskBuildsTheRequest() throws {
        let p = try ArgumentParser.parse(["--to-disk", "a", "b"], spec: EvictCommand.spec)
        #expect(p.positionals == ["a", "b"] && p.flag("to-disk"))
        let after = try ArgumentParser.parse(["a", "--to-disk"], spec: EvictCommand.spec)
        #expect(after.positionals == ["a"] && after.flag("to-disk"))
        let plain = try ArgumentParser.parse(["a", "b"], spec: EvictCommand.spec)
        #expect(plain.positionals == ["a", "b"] && !plain.flag("to-disk"))
    }

    @Test func toDiskIsAFlag() {
        #expect(throws: IceboxError.self) { try ArgumentParser.parse(["--to-disk=yes", "a"], spec: EvictCommand.spec) }
        let help = EvictCommand.spec.help
        #expect(help.contains("--to-disk") && help.contains("CRIU") && help.contains("--pid-namespace"), "\(help)")
    }

    @Test("--evict-to on policy set and daemon: kill or disk, else 64 naming both", arguments: ["policy", "daemon"])
    func evictToOption(_ command: String) throws {
        let spec = command == "policy" ? PolicyCommand.spec : DaemonCommand.spec
        let words = command == "policy" ? ["set"] : []
        let disk = try ArgumentParser.parse(words + ["--evict-to", "disk"], spec: spec)
        #expect(try PolicyOptions.settings(disk).map(\.setting) == [.evictTo(.disk)])
        let kill = try ArgumentParser.parse(words + ["--evict-to=kill"], spec: spec)
        #expect(try PolicyOptions.settings(kill).map(\.setting) == [.evictTo(.kill)])
        let bad = try ArgumentParser.parse(words + ["--evict-to", "swap"], spec: spec)
        do {
            _ = try PolicyOptions.settings(bad)
            Issue.record("--evict-to swap was taken")
        } catch {
            #expect(error.code == .usage, "\(error)")
            #expect(
                error.message.contains("--evict-to 'swap'") && (error.hint ?? "").contains("use kill (the default) or disk"), "\(error)")
        }
        #expect(spec.help.contains("--evict-to kill|disk"))
    }

    @Test func completionOffersTheValues() throws {
        let model = CompletionModel(IceboxMain.commands.map { $0.spec }, version: IceboxMain.version)
        for name in ["policy", "daemon"] {
            let option = try #require(model.commands.first { $0.name == name }?.options.first { $0.name == "evict-to" })
            #expect(option.values?.words == ["kill", "disk"], "\(name)")
        }
        let evict = try #require(model.commands.first { $0.name == "evict" })
        #expect(evict.options.contains { $0.name == "to-disk" && $0.values == nil })
        #expect(evict.operand(0)?.source == .liveApps && evict.lastOperandRepeats, "the names still complete")
    }
}

/// The same through the binary and a real daemon: the exit status, the stored policy and
/// what `icebox policy` shows.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"))
struct EvictToDiskPolicyTests {
    @Test("a bad --evict-to exits 64 naming the values, and starts no daemon")
    func badValueExits64() throws {
        let box = Sandbox()
        defer { box.close() }
        for args in [["policy", "set", "--evict-to", "swap"], ["daemon", "--evict-to", "swap"]] {
            let r = try box.icebox(args)
            #expect(r.status == 64, "\(args): \(r.output)")
            #expect(r.stderr.contains("--evict-to 'swap'") && r.stderr.contains("kill") && r.stderr.contains("disk"), "\(r.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: box.runtimeDir + "/icebox.sock"), "nothing was sent")
        #expect(!FileManager.default.fileExists(atPath: box.stateDir + "/policy.json"), "nothing was saved")
    }

    @Test("launch --evict-to: disk needs --pid-namespace, an unknown value is refused; both 64, nothing launched")
    func launchEvictToIsChecked() throws {
        let box = Sandbox()
        defer { box.close() }
        let disk = try box.icebox(["launch", "--evict-to", "disk", "a", "--", "sleep", "100"])
        #expect(disk.status == 64 && disk.stderr.contains("--evict-to disk needs --pid-namespace"), "\(disk.output)")
        let odd = try box.icebox(["launch", "--pid-namespace", "--evict-to", "swap", "a", "--", "sleep", "100"])
        #expect(odd.status == 64 && odd.stderr.contains("invalid --evict-to 'swap'"), "\(odd.output)")
        #expect(!FileManager.default.fileExists(atPath: box.runtimeDir + "/icebox.sock"), "nothing was sent")
    }

    @Test("policy set --evict-to disk is kept, shown and survives a daemon restart; an older policy.json reads as kill")
    func setShownAndKept() throws {
        let box = Sandbox()
        defer { box.close() }
        let shown = try box.icebox(["policy"])
        #expect(shown.status == 0 && shown.stdout.contains("evict to           kill\n"), "\(shown.output)")
        let set = try box.icebox(["policy", "set", "--evict-to", "disk", "--max-suspended", "4"])
        #expect(set.status == 0 && set.stdout.contains("evict to           disk\n"), "\(set.output)")
        let json = try box.icebox(["policy", "--json"])
        let policy = try #require(JSONLines.decode(EvictionPolicy.self, json.stdout.trimmingCharacters(in: .newlines)), "\(json.output)")
        #expect(policy.evictTo == .disk && policy.maxSuspended == 4)
        let file = try String(contentsOfFile: box.stateDir + "/policy.json", encoding: .utf8)
        #expect(file.contains(#""evict_to":"disk""#), "\(file)")
        #expect(box.events().contains { $0.kind == .policy && $0.detail.contains("evict-to=disk") }, "the change is logged")

        // A new daemon applies the saved policy.
        #expect(try box.icebox(["daemon", "--stop"]).status == 0)
        #expect(try box.icebox(["policy"]).stdout.contains("evict to           disk\n"))

        // A policy.json from before evict_to: its settings stay, its victims are killed.
        #expect(try box.icebox(["daemon", "--stop"]).status == 0)
        let old = file.replacingOccurrences(of: #","evict_to":"disk""#, with: "")
        #expect(!old.contains("evict_to"))
        try old.write(toFile: box.stateDir + "/policy.json", atomically: true, encoding: .utf8)
        let after = try box.icebox(["policy"])
        #expect(after.status == 0, "\(after.output)")
        #expect(after.stdout.contains("evict to           kill\n") && after.stdout.contains("max suspended      4\n"), "\(after.stdout)")
    }
}

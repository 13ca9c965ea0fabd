import Foundation
import Glibc
import Testing

/// The scripts that install, build, test or measure print their usage for `--help` and do
/// nothing else: `scripts/test --help` once ran the whole suite, `scripts/bench/run --help`
/// the one-shot benchmarks, `scripts/bench/memory-policy --help` its benchmark.
@Suite(.timeLimit(.minutes(5)))
struct ScriptHelpTests {
    static let pythonBenchmarks = [
        "apps", "budget", "codecs", "cold-caches", "disk", "freeze-anatomy", "library-call", "lifecycle-latency",
        "memory-policy", "pid-namespace", "spawn", "standin-departure", "state-dir-cost",
    ]

    @Test(
        "--help prints the script's usage and exits 0, before it installs, builds or measures anything",
        arguments: [
            "scripts/test", "scripts/bench/run", "scripts/bench/oneshot-tight", "scripts/bench/startup-faults",
            "scripts/link-order", "scripts/fuzz", "scripts/faults", "scripts/soak", "scripts/docs-check", "scripts/demo",
        ] + Self.pythonBenchmarks.map { "scripts/bench/" + $0 })
    func helpDoesNothingElse(script: String) throws {
        // Stand-ins for what the script would run first: each says it was run, and fails.
        let shims = Sandbox.temporaryDirectory("icebox-script-help")
        defer { try? FileManager.default.removeItem(atPath: shims) }
        let ran = shims + "/ran.log"
        for tool in ["apt-get", "swift", "swiftc", "gcc", "cc", "perf"] {
            let path = shims + "/" + tool
            try "#!/bin/sh\necho \(tool) >>\(ran)\nexit 1\n".write(toFile: path, atomically: true, encoding: .utf8)
            chmod(path, 0o755)
        }
        var env = ProcessInfo.processInfo.environment
        env["PATH"] = shims + ":" + (env["PATH"] ?? "/usr/bin:/bin")
        env["ICEBOX_BIN"] = nil

        let result = try ShellHarness.run([ShellHarness.root + "/" + script, "--help"], environment: env)
        let source = try String(contentsOfFile: ShellHarness.root + "/" + script, encoding: .utf8)
        // The header's first line: a shell comment, or a Python docstring's opening.
        let first = source.split(separator: "\n")[1]
        let summary = first.hasPrefix("\"\"\"") ? first.dropFirst(3) : first.dropFirst(2)
        #expect(result.status == 0, "\(result.output)")
        #expect(result.stdout.hasPrefix(summary), "\(result.output)")
        #expect(!FileManager.default.fileExists(atPath: ran), "\((try? String(contentsOfFile: ran, encoding: .utf8)) ?? "")")
    }
}

import Foundation
import Testing

@testable import IceboxCLI

/// The README's command table stays in step with --help: a newcomer found `probe` and
/// `resume --wait-ready` missing from it.
struct ReadmeTests {
    /// Options a usage line shows that the table leaves to the man page: the cgroup root of
    /// a daemon started on demand, and what the completion scripts ask for.
    static let leftToTheManPage: [String: Set<String>] = [
        "doctor": ["--cgroup-root"], "daemon": ["--cgroup-root"], "completion": ["--names", "--all"],
    ]

    @Test("every command, and every option its usage line shows, is in the README's command table")
    func commandTableMatchesHelp() throws {
        // Tests/IceboxCLITests/ReadmeTests.swift → the package root.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let rows = readme.split(separator: "\n").filter { $0.hasPrefix("| `icebox ") }.map(String.init)
        try #require(!rows.isEmpty, "no command table in README.md")
        for command in IceboxMain.commands {
            let name = command.spec.name
            // freeze and thaw share a row: `icebox freeze/thaw ...`.
            let row = rows.first { row in
                let words = row.dropFirst("| `icebox ".count).prefix { $0 != " " && $0 != "`" }
                return words.split(separator: "/").contains { $0 == name }
            }
            guard let row else {
                Issue.record("icebox \(name) is not in the README's command table")
                continue
            }
            let usage = command.spec.help.split(separator: "\n").first ?? ""
            let options = usage.split(whereSeparator: { " []|".contains($0) }).filter { $0.hasPrefix("--") && $0 != "--" }
            for option in options where !(Self.leftToTheManPage[name]?.contains(String(option)) ?? false) {
                #expect(row.contains(option), "\(option) of icebox \(name) (\(usage)) is not in its README row: \(row)")
            }
        }
    }
}

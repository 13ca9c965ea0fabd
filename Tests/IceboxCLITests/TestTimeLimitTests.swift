import Foundation
import Testing

/// Every time limit in the package's tests is at least five minutes. A limit counts wall time
/// from a test's start, and Swift Testing runs tests as tasks on a pool as wide as the
/// machine's cores (two here) while many integration tests block their thread on a child or a
/// deadline: a test with no work of its own can wait that long for a thread. On one fresh CI
/// machine pure tests under a two-minute limit finished after 139 s of such waiting and failed;
/// a limit is there to end a hang, and a hang lasts longer than any run.
struct TestTimeLimitTests {
    static let shortest = 5
    /// Split so that this file's own search does not match itself.
    static let trait = ".time" + "Limit("

    @Test("no test or suite of the package has a time limit under five minutes")
    func noShortLimit() throws {
        // Tests/IceboxCLITests/TestTimeLimitTests.swift → Tests.
        let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let files = try #require(FileManager.default.enumerator(atPath: tests.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }
        try #require(files.count > 100, "found only \(files.count) test files under \(tests.path)")
        var limits = 0
        for file in files {
            let text = try String(contentsOfFile: tests.appendingPathComponent(file).path, encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                guard let range = line.range(of: Self.trait) else { continue }
                limits += 1
                let rest = line[range.upperBound...]
                let minutes = rest.hasPrefix(".minutes(") ? Int(rest.dropFirst(".minutes(".count).prefix { $0.isNumber }) : nil
                #expect(
                    minutes.map { $0 >= Self.shortest } ?? false,
                    "\(file):\(number + 1): \(line.trimmingCharacters(in: .whitespaces)): give it .minutes(\(Self.shortest)) or more")
            }
        }
        #expect(limits > 50, "found only \(limits) time limits: is the scan still reading the suites?")
    }
}

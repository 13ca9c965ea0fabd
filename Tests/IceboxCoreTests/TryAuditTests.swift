import Foundation
import Testing

/// Every `try?` in IceboxCore throws an error away; each one says why that is right, in a `//`
/// comment on its line or on the line just above, so that a reader (and a reviewer) can tell a
/// considered best effort from a silent failure. Source files only: the DocC articles' samples
/// are the user's code.
@Suite("try? audit of IceboxCore")
struct TryAuditTests {
    /// `file:line` of each `try?` in `source` with no `//` comment on its line and no comment
    /// line just above it.
    static func unexplained(in source: String, file: String) -> [String] {
        let lines = source.split(separator: "\n", omittingEmptySubsequences: false)
        var found: [String] = []
        for (index, line) in lines.enumerated() where containsTryQuestionMark(line) {
            if line.contains("//") { continue }
            if index > 0, lines[index - 1].drop(while: { $0 == " " }).hasPrefix("//") { continue }
            found.append("\(file):\(index + 1)")
        }
        return found
    }

    /// Whether `line` has `try?` as a word (not the end of `Entry?`).
    static func containsTryQuestionMark(_ line: Substring) -> Bool {
        var rest = line[...]
        while let hit = rest.firstRange(of: "try?") {
            if hit.lowerBound == line.startIndex { return true }
            let before = line[line.index(before: hit.lowerBound)]
            if !(before.isLetter || before.isNumber || before == "_") { return true }
            rest = rest[hit.upperBound...]
        }
        return false
    }

    @Test func theScannerFindsWhatItShould() {
        let source = """
            let a = try? f()
            let b = try? g()  // best effort: the file may be gone already
            // The directory may be gone already, and the record says so.
            let c = try? h()
            let d = 1
            let e = try? i()
            var chain: [(mount: Entry, via: Entry?)] = []
            if (try? j()) == nil {}
            """
        #expect(Self.unexplained(in: source, file: "x.swift") == ["x.swift:1", "x.swift:6", "x.swift:8"])
    }

    @Test func everyTryQuestionMarkInCoreSaysWhy() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let core = root.appendingPathComponent("Sources/IceboxCore")
        let walker = try #require(FileManager.default.enumerator(atPath: core.path), "cannot list \(core.path)")
        var files: [String] = []
        while let relative = walker.nextObject() as? String {
            if relative.hasSuffix(".swift") { files.append(relative) }
        }
        try #require(files.count > 50, "found only \(files.count) Swift files under \(core.path)")
        var found: [String] = []
        for relative in files.sorted() {
            let text = try String(contentsOfFile: core.path + "/" + relative, encoding: .utf8)
            found += Self.unexplained(in: text, file: "Sources/IceboxCore/" + relative)
        }
        #expect(
            found.isEmpty,
            "\(found.count) `try?` without a comment saying why the error is ignored:\n\(found.joined(separator: "\n"))")
    }
}

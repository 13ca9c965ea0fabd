import Foundation
import Glibc
import IceboxCore
import Testing

/// A policy.json the daemon cannot use is said in the event log, not run on the defaults
/// unseen.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct PolicyFileProblemTests {
    @Test("a policy.json that holds no policy is said as the daemon starts, and the defaults apply")
    func unreadablePolicyIsSaid() throws {
        let box = Sandbox()
        defer { box.close() }
        #expect(mkdir(box.stateDir, 0o700) == 0 || errno == EEXIST)
        let file = box.stateDir + "/policy.json"
        try #"{"max_suspended": "#.write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o600)
        let shown = try box.icebox(["policy"])
        #expect(shown.status == 0, "\(shown.output)")
        let said = box.events().filter { $0.kind == .error && $0.detail.hasPrefix("policy: ") }.map(\.detail)
        #expect(said.count == 1, "\(said)")
        #expect(said.first?.contains("\(file) holds no policy this icebox reads") == true, "\(said)")
        #expect(said.first?.hasSuffix("; defaults used") == true, "\(said)")
    }
}

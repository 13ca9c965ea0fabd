import Foundation
import IceboxCore
import Testing

/// A secret in the caller's environment or passed with --env never leaves the daemon in
/// ps or log output (terminals, CI logs and bug reports are where it would end up).
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct SecretsTests {
    @Test("no --env value or environment value shows in ps, ps --json, log or log --json")
    func noSecretInOutput() throws {
        let box = Sandbox("secrets")
        defer { box.close() }
        let launched = try box.icebox(
            ["launch", "--env", "API_TOKEN=hunter2-from-env", "vault", "--", "sleep", "1000"],
            extraEnv: ["DB_PASSWORD": "s3cret-from-caller"])
        #expect(launched.status == 0, "\(launched.output)")
        #expect(try box.icebox(["suspend", "--grace", "0", "vault"]).status == 0)
        var outputs: [String] = []
        for args in [
            ["ps"], ["ps", "--all"], ["ps", "--json"], ["ps", "--json", "--all"], ["log"], ["log", "--json"], ["log", "vault"],
        ] {
            let r = try box.icebox(args)
            #expect(r.status == 0, "icebox \(args.joined(separator: " ")): \(r.output)")
            outputs.append(r.output)
        }
        for text in outputs + [launched.output] {
            #expect(!text.contains("hunter2-from-env") && !text.contains("s3cret-from-caller"), "a secret leaked: \(text)")
        }
        // The names are still there for whoever needs to know what was set.
        let json = try box.icebox(["ps", "--json"]).stdout
        #expect(json.contains("API_TOKEN") && json.contains("DB_PASSWORD"))
    }
}

import Foundation
import Testing

@testable import IceboxCLI

/// man/icebox.1 stays in step with --help: every command and every option the parser
/// accepts is documented.
struct ManPageTests {
    static var manPage: String {
        // Tests/IceboxCLITests/ManPageTests.swift → the package root.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = (try? String(contentsOf: root.appendingPathComponent("man/icebox.1"), encoding: .utf8)) ?? ""
        // roff writes a literal hyphen as \- .
        return text.replacingOccurrences(of: "\\-", with: "-")
    }

    @Test("every command and option in --help is in the man page")
    func optionsDocumented() throws {
        let man = Self.manPage
        try #require(!man.isEmpty, "man/icebox.1 not found")
        for command in IceboxMain.commands {
            #expect(
                man.contains("icebox \(command.spec.name)") || man.contains(".B \(command.spec.name)"),
                "command \(command.spec.name) is not in the man page")
            for option in command.spec.options + CommandSpec.globalOptions {
                #expect(man.contains("--\(option.name)"), "--\(option.name) of \(command.spec.name) is not in the man page")
                for alias in option.aliases {
                    #expect(man.contains("--\(alias)"), "--\(alias) of \(command.spec.name) is not in the man page")
                }
                if let short = option.short {
                    // Documented as ".BR -a ", " --all" (or with the value inside the quotes).
                    #expect(
                        man.contains(".BR -\(short) \", \" --\(option.name)") || man.contains(".BR -\(short) \", \" \"--\(option.name)"),
                        "-\(short) (--\(option.name) of \(command.spec.name)) is not in the man page")
                }
            }
        }
        for field in PsField.allCases.map(\.rawValue) {
            #expect(man.contains(".B .\(field)\n"), "ps --format field .\(field) is not documented")
        }
        for feature in DoctorCommand.Feature.allCases {
            #expect(man.contains(feature.rawValue), "doctor --require \(feature.rawValue) is not documented")
        }
        for code in ["64", "69", "77", "126", "127", "129", "130", "143"] {
            #expect(man.contains(code), "exit code \(code) is not documented")
        }
        for variable in [
            "ICEBOX_RUNTIME_DIR", "ICEBOX_STATE_DIR", "ICEBOX_CGROUP_ROOT", "ICEBOX_NO_AUTOSTART",
            "NOTIFY_SOCKET", "ICEBOX_APP_NAME", "ICEBOX_LAUNCH_REASON", "NO_COLOR", "ICEBOX_METRICS_FILE", "ICEBOX_LOG_MAX_SIZE",
            "ICEBOX_LOG_KEEP",
        ] {
            #expect(man.contains(variable), "\(variable) is not documented")
        }
    }

    @Test("every command has help text that names its usage, and ps --help its template fields")
    func helpTexts() {
        for command in IceboxMain.commands {
            #expect(command.spec.help.contains("usage: icebox \(command.spec.name)"))
        }
        for field in PsField.allCases.map(\.rawValue) { #expect(PsCommand.spec.help.contains(".\(field)"), ".\(field)") }
        #expect(IceboxMain.overview.contains("-V, --version") && IceboxMain.overview.contains("--color WHEN"))
    }
}

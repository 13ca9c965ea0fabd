import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// `icebox doctor`'s criu line: the real criu (scripts/criu builds one) and a fake old one
/// named by ICEBOX_CRIU; `--require criu`; the verdict cached in the sandbox's state directory.
@Suite(.serialized, .enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"))
struct DoctorCriuTests {
    static let working: Bool = {
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "ICEBOX_CRIU")
        return CriuProbe.run(environment: env, stateDir: nil).works
    }()

    /// `doctor --require criu` with ICEBOX_CRIU naming a fake criu of `version` whose every
    /// other command fails: it must exit 1, and its criu line is returned with its output and
    /// the fake's path.
    static func doctorWithFailingCriu(_ box: Sandbox, version: String) throws -> (doctor: Sandbox.Result, line: String, fake: String) {
        let fake = box.dir + "/criu"
        let script =
            "#!/bin/sh\ncase \"$1\" in --version) echo 'Version: \(version)' ;; *) echo 'Error (fake.c:1): fake' >&2; exit 1 ;; esac\n"
        #expect(FileManager.default.createFile(atPath: fake, contents: Data(script.utf8), attributes: [.posixPermissions: 0o755]))
        let doctor = try box.icebox(["doctor", "--color", "never", "--require", "criu"], extraEnv: ["ICEBOX_CRIU": fake])
        #expect(doctor.status == 1, "\(doctor.output)")
        return (doctor, try #require(criuLine(doctor.stdout), "\(doctor.stdout)"), fake)
    }

    /// The criu line of doctor's table, "ok  criu  ...".
    static func criuLine(_ stdout: String) -> String? {
        stdout.split(separator: "\n").map(String.init).first { $0.split(separator: " ").dropFirst().first == "criu" }
    }

    @Test(
        "doctor reports a working criu: version, path, canary times; --require criu passes; the verdict is cached",
        .enabled(if: working, "no working criu >= 4.1 (4.2 on Linux >= 6.16) here (run scripts/criu as root to build one)"))
    func reportsWorkingCriu() throws {
        let box = Sandbox()
        defer { box.close() }
        // A state directory as a daemon leaves it (doctor makes none: no verdict is kept
        // without one).
        #expect(mkdir(box.stateDir, 0o700) == 0)
        let first = try box.icebox(["doctor", "--color", "never", "--require", "criu"], extraEnv: ["ICEBOX_CRIU": ""])
        #expect(first.status == 0, "\(first.output)")
        let line = try #require(Self.criuLine(first.stdout), "\(first.stdout)")
        #expect(line.hasPrefix("ok "), "\(line)")
        #expect(line.contains(": works (check "), "\(line)")
        #expect(line.contains("canary dumped in ") && line.contains(" and restored in "), "\(line)")
        #expect(line.range(of: #"criu [0-9]+\.[0-9]+(\.[0-9]+)? at /"#, options: .regularExpression) != nil, "\(line)")
        // Kept in the state directory, ours and 0600; the second doctor reads it.
        var st = stat()
        #expect(lstat(box.stateDir + "/criu-probe.json", &st) == 0 && st.st_mode & 0o777 == 0o600 && st.st_uid == geteuid())
        let second = try box.icebox(["doctor", "--json"], extraEnv: ["ICEBOX_CRIU": ""])
        #expect(second.status == 0, "\(second.output)")
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [String: Any], "\(second.stdout)")
        #expect((report["features"] as? [String: Bool])?["criu"] == true, "\(second.stdout)")
        let finding = (report["findings"] as? [[String: Any]])?.first { $0["check"] as? String == "criu" }
        #expect((finding?["detail"] as? String)?.contains("cached for kernel") == true, "\(second.stdout)")
        // With other capabilities (CAP_SYS_ADMIN out of the bounding set, as a daemon that
        // dropped it), criu would run with others too: that verdict is not reused.
        let setpriv = Process()
        setpriv.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        setpriv.arguments = ["--bounding-set", "-sys_admin", "--", Sandbox.binary, "doctor", "--color", "never"]
        setpriv.environment = box.environment.merging(["ICEBOX_CRIU": ""]) { $1 }
        let fewer = try Sandbox.runToEnd(setpriv, timeout: 60, what: "setpriv ... icebox doctor")
        let fewerLine = try #require(Self.criuLine(fewer.stdout), "\(fewer.output)")
        #expect(!fewerLine.contains("cached for kernel"), "\(fewerLine)")
    }

    @Test("doctor names a criu too old for this kernel and why; --require criu then exits 1")
    func reportsOldCriu() throws {
        let box = Sandbox()
        defer { box.close() }
        let (doctor, line, fake) = try Self.doctorWithFailingCriu(box, version: "3.17.1")
        #expect(line.hasPrefix("-- "), "\(line)")
        #expect(line.contains("criu 3.17.1 at \(fake) (ICEBOX_CRIU): "), "\(line)")
        if CriuProbe.kernelRestrictsPassCred() {
            #expect(line.contains("older than 4.2, which this kernel needs"), "\(line)")
        } else if CriuProbe.kernelSplitsVvar() {
            #expect(line.contains("older than 4.1, which this kernel needs"), "\(line)")
        } else {
            #expect(line.contains("criu check: Error (fake.c:1): fake"), "\(line)")
        }
        #expect(doctor.stderr.contains("required but missing: criu"), "\(doctor.stderr)")
    }

    @Test("doctor says why a criu 4.1.1 is not enough on a kernel that restricts SO_PASSCRED (Linux >= 6.16)")
    func reportsCriu411AsTooOldWherePassCredIsRestricted() throws {
        let box = Sandbox()
        defer { box.close() }
        let (_, line, fake) = try Self.doctorWithFailingCriu(box, version: "4.1.1")
        #expect(line.hasPrefix("-- ") && line.contains("criu 4.1.1 at \(fake) (ICEBOX_CRIU): "), "\(line)")
        if CriuProbe.kernelRestrictsPassCred() {
            #expect(line.contains("older than 4.2, which this kernel needs"), "\(line)")
            #expect(line.contains("SO_PASSCRED") && line.contains("Linux 6.16") && line.contains("TCP or UDP socket"), "\(line)")
        } else {
            #expect(line.contains("criu check: Error (fake.c:1): fake"), "\(line)")
        }
    }
}

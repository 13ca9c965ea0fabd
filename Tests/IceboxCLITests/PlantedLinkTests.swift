import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// Files icebox writes in a directory someone else can write (node_exporter's textfile
/// directory, a shared log directory): a symbolic link planted there by that user, pointing
/// at a root-only file, must never make icebox (root) write through it.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct PlantedLinkTests {
    static let attacker = uid_t(65534)

    /// A root-only file (0600) with known contents: what the attack would overwrite.
    static func secret(in box: Sandbox) throws -> String {
        let path = box.dir + "/secret"
        try "root only\n".write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o600)
        return path
    }

    static func unchanged(_ secret: String) throws -> Bool {
        let text = try String(contentsOfFile: secret, encoding: .utf8)
        let mode = try FileManager.default.attributesOfItem(atPath: secret)[.posixPermissions] as? Int
        return text == "root only\n" && mode == 0o600
    }

    /// A directory the attacker owns (as node_exporter owns its textfile directory).
    static func theirDirectory(in box: Sandbox, _ name: String) -> String {
        let dir = box.dir + "/" + name
        mkdir(dir, 0o755)
        chown(dir, attacker, attacker)
        return dir
    }

    /// The attacker's link: made by them (lchown), in their directory.
    static func plant(_ link: String, to target: String) {
        symlink(target, link)
        lchown(link, attacker, attacker)
    }

    func waitFor(_ what: String, timeout: Double = 10, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while try !condition() && Date() < deadline { usleep(20_000) }
        #expect(try condition(), "timed out waiting for \(what)")
    }

    @Test("daemon --metrics-file: a link planted where the temporary file was made (PATH.tmp.PID) is never written through")
    func metricsTemporaryFileLink() throws {
        let box = Sandbox()
        defer { box.close() }
        let secret = try Self.secret(in: box)
        let dir = Self.theirDirectory(in: box, "textfile")
        let path = dir + "/icebox.prom"
        let env = ["ICEBOX_METRICS_FILE": path]

        // A daemon started on demand keeps the file; it warns that others can write there.
        let first = try box.icebox(["launch", "one", "--", "sleep", "1000"], extraEnv: env)
        #expect(first.status == 0, "\(first.output)")
        try waitFor("the metrics file") {
            ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").contains("icebox_apps{state=\"active\"} 1")
        }
        let pid = try #require(box.daemonPID)
        let log = try String(contentsOfFile: box.stateDir + "/daemon.log", encoding: .utf8)
        #expect(log.contains("warning: metrics file directory \(dir) belongs to uid 65534"), "\(log)")
        #expect(log.contains("never writes through a link there"), "\(log)")

        // The attack: a link at the name the next temporary file was made under, to the secret.
        let planted = path + ".tmp.\(pid)"
        Self.plant(planted, to: secret)
        let second = try box.icebox(["launch", "two", "--", "sleep", "1000"], extraEnv: env)
        #expect(second.status == 0, "\(second.output)")
        try waitFor("the second launch in the metrics file") {
            ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").contains("icebox_apps{state=\"active\"} 2")
        }

        #expect(try Self.unchanged(secret), "the daemon wrote through the planted link")
        #expect(try FileIO.linkStatus(path)?.kind == .regular, "the metrics file must be a file of its own, not the link")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: planted) == secret, "the planted link is left alone")
        let entries = try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
        #expect(entries == ["icebox.prom", "icebox.prom.tmp.\(pid)"], "no temporary file left behind: \(entries)")
    }

    @Test("daemon --metrics-file: a group- or world-writable directory is warned about at start; a sticky one (/tmp) is not")
    func metricsDirectoryOthersCanWrite() throws {
        let box = Sandbox()
        defer { box.close() }
        let open = box.dir + "/open", sticky = box.dir + "/sticky"
        mkdir(open, 0o755)
        chmod(open, 0o775)
        mkdir(sticky, 0o755)
        chmod(sticky, 0o1777)
        let warned = try box.icebox(["daemon", "--metrics-file", open + "/icebox.prom"])
        #expect(warned.status == 0, "\(warned.output)")
        #expect(
            warned.stderr.contains("warning: metrics file directory \(open) can be written by its group (mode 0775)"), "\(warned.stderr)")
        _ = try box.icebox(["daemon", "--stop"])
        let quiet = try box.icebox(["daemon", "--metrics-file", sticky + "/icebox.prom"])
        #expect(quiet.status == 0, "\(quiet.output)")
        #expect(!quiet.stderr.contains("warning"), "\(quiet.stderr)")
    }

    @Test("run --log: a link planted at the log's path is refused (exit 77), nothing written through it")
    func runLogLink() throws {
        let box = Sandbox()
        defer { box.close() }
        let secret = try Self.secret(in: box)
        let dir = Self.theirDirectory(in: box, "logs")
        let link = dir + "/run.log"
        Self.plant(link, to: secret)
        let r = try box.icebox(["run", "--log", link, "--", "true"])
        #expect(r.status == 77, "\(r.output)")
        #expect(r.stderr.contains("--log \(link): it is a symbolic link"), "\(r.stderr)")
        #expect(try Self.unchanged(secret), "icebox run appended its events to the planted link's target")
        #expect(try box.apps().isEmpty, "nothing was launched")

        // A plain file there is appended to as before.
        let plain = dir + "/plain.log"
        let ok = try box.icebox(["run", "--log", plain, "--", "true"])
        #expect(ok.status == 0, "\(ok.output)")
        #expect(try String(contentsOfFile: plain, encoding: .utf8).contains("→ launching"))
    }
}

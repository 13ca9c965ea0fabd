import Foundation
import Glibc
import IceboxCore
import Testing

@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct RunTests {
    @Test("run passes the terminal's stdio and exits with the app's status")
    func exitStatus() throws {
        let box = Sandbox()
        defer { box.close() }
        let r = try box.icebox(["run", "--", "sh", "-c", "read line; echo got $line; echo oops >&2; exit 7"], stdin: "hello\n")
        #expect(r.status == 7)
        #expect(r.stdout.contains("got hello"))
        #expect(r.stderr.contains("oops"))
        #expect(r.stderr.contains("launching → active"), "the timed log goes to stderr")
        let killed = try box.icebox(["run", "--name", "selfkill", "--", "sh", "-c", "kill -KILL $$"])
        #expect(killed.status == 128 + SIGKILL)
    }

    @Test("run without a name derives a unique one; other terminals control it by name")
    func namesAndControl() throws {
        let box = Sandbox()
        defer { box.close() }
        let first = Sandbox.Background(box, ["run", "--", "sleep", "1000"])
        let deadline = Date().addingTimeInterval(10)
        while (try? box.apps()["sleep"]?.state) != .active && Date() < deadline { usleep(20_000) }
        let second = try box.icebox(["launch", "sleep-x", "--", "sleep", "1000"])
        #expect(second.status == 0)
        #expect(try box.icebox(["suspend", "--grace", "0", "sleep"]).status == 0)
        #expect(try box.apps()["sleep"]?.state == .suspended)
        #expect(try box.icebox(["terminate", "sleep"]).status == 0)
        let ended = first.result(within: 20)
        #expect(ended?.status == 128 + SIGTERM, "\(ended?.output ?? "still running after 20 s")")
    }

    @Test("SIGTERM to icebox run terminates the app the graceful way")
    func signalToRun() throws {
        let box = Sandbox()
        defer { box.close() }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Sandbox.binary)
        // Ready once the trap is set (ready at exec, SIGTERM could come before it).
        let trapped = box.dir + "/trapped"
        p.arguments = [
            "run", "--name", "graceful", "--ready", "cmd:test -e \(trapped)", "--", "sh", "-c",
            "trap 'exit 42' TERM; touch \(trapped); while :; do sleep 0.05; done",
        ]
        p.environment = box.environment
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        let deadline = Date().addingTimeInterval(10)
        while (try? box.apps()["graceful"]?.state) != .active && Date() < deadline { usleep(20_000) }
        kill(p.processIdentifier, SIGTERM)
        p.waitUntilExit()
        #expect(p.terminationStatus == 42)
        #expect(try box.apps()["graceful"]?.state == .terminated)
    }
}

import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// The daemon's one loop never waits on one client or one app: another client's request is
/// answered while a hostile or stuck one is being dealt with.
@Suite(.enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(2)))
struct LoopTests {
    @Test("a request line without end is cut off at its bound; other clients are answered meanwhile")
    func endlessRequestLineIsCutOff() throws {
        let box = Sandbox("endless")
        defer { box.close() }
        #expect(try box.icebox(["launch", "idle", "--", "sleep", "1000"]).status == 0)
        let fd = try UnixSocket.connect(path: box.runtimeDir + "/icebox.sock")
        defer { close(fd) }
        // 2 MiB of a request that never ends, sent while another client asks for ps.
        let junk = [UInt8](repeating: 0x7b, count: 64 * 1024)
        var sent = 0
        var cutOff = false
        while sent < 2 << 20 {
            do { try UnixSocket.send(fd, junk) } catch {
                cutOff = true  // EPIPE/ECONNRESET: the daemon closed it
                break
            }
            sent += junk.count
        }
        let ps = try box.icebox(["ps"])
        #expect(ps.status == 0 && ps.stdout.contains("idle"))
        // The daemon closed the connection: reading gives EOF (or a reset), not a hang.
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        #expect(cutOff || poll(&pfd, 1, 5_000) == 1, "the connection was not closed")
        #expect(box.events().contains { $0.kind == .daemon && $0.detail.contains("cut off") && $0.detail.contains("without a newline") })
    }
}

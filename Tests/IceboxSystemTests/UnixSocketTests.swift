import Foundation
import Glibc
import Testing

@testable import IceboxSystem

/// A socket path the kernel cannot take is refused with the error that says so, and the
/// socket made for it is closed: a daemon or client that reports the error keeps no descriptor.
struct UnixSocketTests {
    /// How many sockets this process has open (/proc/self/fd links "socket:[inode]").
    static func openSockets() -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.filter { FileIO.readLink("/proc/self/fd/" + $0)?.hasPrefix("socket:") == true }.count
    }

    @Test("a path over 107 bytes: listen, connect and bindNotify fail with ENAMETOOLONG and close their socket")
    func tooLongAPathLeavesNoSocket() {
        let path = "/tmp/" + String(repeating: "x", count: 200)
        let before = Self.openSockets()
        // Many tries: a leak would be 150 sockets; tests running beside this one open a few.
        for _ in 0..<50 {
            for call in 0..<3 {
                do {
                    switch call {
                    case 0: _ = try UnixSocket.listen(path: path)
                    case 1: _ = try UnixSocket.connect(path: path)
                    default: _ = try UnixSocket.bindNotify(path: path)
                    }
                    Issue.record("call \(call) took a path of 205 bytes")
                } catch { #expect(error.errno == ENAMETOOLONG, "\(error)") }
            }
        }
        #expect(Self.openSockets() - before < 50, "sockets left open: \(Self.openSockets() - before)")
    }
}

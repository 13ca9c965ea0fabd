import Glibc
import IceboxSystem
import IceboxTestSupport
import Testing

@testable import IceboxCore

/// The rules a client and the daemon's directories are held to, without root: which
/// statuses are refused, which daemons are trusted, and that a refusal sent before the
/// daemon closed is what the caller sees, not EPIPE.
@Suite struct DaemonTrustTests {
    typealias Status = FileIO.Status

    @Test func directoriesMustBeOursNotLinksNotWritableByOthers() {
        let me: uid_t = 1000
        #expect(IceboxPaths.trustProblem(Status(kind: .directory, owner: me, permissions: 0o700), expected: .directory, user: me) == nil)
        let theirs = IceboxPaths.trustProblem(
            Status(kind: .directory, owner: 65534, permissions: 0o700), expected: .directory, user: me)
        #expect(theirs?.contains("belongs to uid 65534") == true)
        let open = IceboxPaths.trustProblem(Status(kind: .directory, owner: me, permissions: 0o777), expected: .directory, user: me)
        #expect(open?.contains("mode is 0777") == true)
        let link = IceboxPaths.trustProblem(Status(kind: .symlink, owner: me, permissions: 0o777), expected: .directory, user: me)
        #expect(link == "it is a symbolic link")
        let file = IceboxPaths.trustProblem(Status(kind: .regular, owner: me, permissions: 0o600), expected: .socket, user: me)
        #expect(file?.contains("not a socket") == true)
        // Ours and only readable by others: not refused; prepare makes it 0700.
        let readable = Status(kind: .directory, owner: me, permissions: 0o755)
        #expect(IceboxPaths.trustProblem(readable, expected: .directory, user: me) == nil)
        #expect(IceboxPaths.onlyTooReadable(readable, user: me))
    }

    @Test func theFallbackParentIsCheckedToo() {
        let fallback = IceboxPaths(runtimeDir: IceboxPaths.fallbackRuntimeParent + "/icebox", stateDir: "/nonexistent")
        #expect(fallback.directories.map(\.path).contains(IceboxPaths.fallbackRuntimeParent))
        let own = IceboxPaths(runtimeDir: "/run/user/1000/icebox", stateDir: "/nonexistent")
        #expect(!own.directories.map(\.path).contains("/run/user/1000"))
    }

    @Test func onlyOurOwnDaemonOrRootsForRoot() {
        #expect(DaemonConnection.trusts(daemon: 1000, client: 1000))
        #expect(!DaemonConnection.trusts(daemon: 0, client: 1000), "root's daemon refuses other users: say so before sending")
        #expect(!DaemonConnection.trusts(daemon: 65534, client: 1000))
        #expect(DaemonConnection.trusts(daemon: 0, client: 0))
        #expect(!DaemonConnection.trusts(daemon: 65534, client: 0), "root sends its environment to no one else")
    }

    /// A listener that, like a daemon refusing a peer, sends one `done` line and closes
    /// before reading anything.
    func refusingServer(_ dir: String) throws -> (listener: Int32, path: String) {
        let path = dir + "/s.sock"
        return (try UnixSocket.listen(path: path), path)
    }

    static let refusal =
        #"{"kind":"done","code":77,"text":"icebox: permission denied: this daemon belongs to uid 0; run your own with ICEBOX_RUNTIME_DIR"}"#

    func withTemporaryDirectory(_ body: (String) throws -> Void) throws {
        let dir = makeTemporaryDirectory("trust")
        defer { removeTree(dir) }
        try body(dir)
    }

    @Test func aRefusalBeforeCloseIsTheErrorNotABrokenPipe() throws {
        try withTemporaryDirectory { dir in
            let (listener, path) = try refusingServer(dir)
            defer { close(listener) }
            let connection = try DaemonConnection(socket: path)
            let peer = try #require(UnixSocket.accept(listener))
            try UnixSocket.send(peer, Array((Self.refusal + "\n").utf8))
            close(peer)
            // A request big enough that the send meets the closed peer (EPIPE).
            let request = ControlRequest.launch(options: LaunchOptions(name: "x", command: ["true"]))
            do throws(IceboxError) {
                try connection.send(request)
                try connection.send(request)
                Issue.record("send to a closed peer succeeded")
            } catch {
                #expect(error.code == .permission, "\(error)")
                #expect(error.message.hasPrefix("permission denied: this daemon belongs to uid 0"), "\(error)")
            }
        }
    }

    @Test func aRefusalsTextReachesTheCaller() throws {
        try withTemporaryDirectory { dir in
            let (listener, path) = try refusingServer(dir)
            defer { close(listener) }
            let connection = try DaemonConnection(socket: path)
            let peer = try #require(UnixSocket.accept(listener))
            try UnixSocket.send(peer, Array((Self.refusal + "\n").utf8))
            close(peer)
            var said: [String] = []
            let code = try connection.replies(until: Clock.monotonicNanos() + 5_000_000_000, what: "ps") { reply in
                if reply.kind == .warning, let text = reply.text { said.append(text) }
            }
            #expect(code == 77)
            #expect(said.first?.contains("permission denied") == true, "\(said)")
        }
    }
}

import Testing

@testable import IceboxCore

@Suite("SocketActivation: sd_listen_fds parsing")
struct SocketActivationTests {
    @Test func descriptorsPassedToThisPid() throws {
        let fds = try #require(
            SocketActivation.passed(environment: ["LISTEN_PID": "42", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "icebox:other"], pid: 42))
        #expect(fds.map(\.fd) == [3, 4])
        #expect(fds.map(\.name) == ["icebox", "other"])
    }

    @Test func namesAreOptional() throws {
        let fds = try #require(SocketActivation.passed(environment: ["LISTEN_PID": "7", "LISTEN_FDS": "1"], pid: 7))
        #expect(fds.map(\.fd) == [3] && fds[0].name == "unknown")
    }

    @Test(arguments: [
        ["LISTEN_FDS": "1"],  // no LISTEN_PID: not for us
        ["LISTEN_PID": "8", "LISTEN_FDS": "1"],  // for another process (inherited by accident)
        ["LISTEN_PID": "7", "LISTEN_FDS": "0"],
        ["LISTEN_PID": "7", "LISTEN_FDS": "-3"],
        ["LISTEN_PID": "7", "LISTEN_FDS": "many"],
        ["LISTEN_PID": "7", "LISTEN_FDS": "99999"],
        [:],
    ])
    func nothingPassed(_ env: [String: String]) {
        #expect(SocketActivation.passed(environment: env, pid: 7) == nil)
    }
}

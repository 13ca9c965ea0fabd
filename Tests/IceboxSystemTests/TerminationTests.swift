import Glibc
import Testing

@testable import IceboxSystem

@Suite("Termination")
struct TerminationTests {
    @Test func cldExitedIsAnExit() {
        #expect(Termination(code: 1, status: 0) == .exited(0))
        #expect(Termination(code: 1, status: 3) == .exited(3))
        #expect(Termination(code: 1, status: 255) == .exited(255))
    }

    @Test func cldKilledAndCldDumpedAreSignals() {
        #expect(Termination(code: 2, status: SIGKILL) == .signaled(SIGKILL))  // CLD_KILLED
        #expect(Termination(code: 3, status: SIGSEGV) == .signaled(SIGSEGV))  // CLD_DUMPED
    }

    @Test func shellStatusIsTheCodeOr128PlusTheSignal() {
        #expect(Termination.exited(0).shellStatus == 0)
        #expect(Termination.exited(42).shellStatus == 42)
        #expect(Termination.signaled(SIGKILL).shellStatus == 137)
        #expect(Termination.signaled(SIGTERM).shellStatus == 143)
        #expect(Termination(code: 2, status: SIGINT).shellStatus == 130)
    }

    @Test func descriptionNamesTheSignal() {
        #expect(Termination.exited(3).description == "exited with status 3")
        #expect(Termination.signaled(SIGKILL).description == "killed by SIGKILL")
    }

    @Test func spawnErrorShellStatuses() {
        #expect(SpawnError.notFound("x").shellStatus == 127)
        #expect(SpawnError.execFailed(path: "/x", step: "execve", errno: ENOENT).shellStatus == 127)
        #expect(SpawnError.execFailed(path: "/x", step: "execve", errno: EACCES).shellStatus == 126)
        #expect(SpawnError.execFailed(path: "/x", step: "execve", errno: ENOEXEC).shellStatus == 126)
        #expect(SpawnError.notFound("nosuch").description == "nosuch: command not found")
    }
}

import Glibc
import Testing

@testable import IceboxSystem

@Suite("Signal names and numbers")
struct SignalsTests {
    @Test(arguments: ["USR1", "SIGUSR1", "usr1", "sigusr1", "SigUsr1", "10"])
    func spellingsOfSIGUSR1(_ text: String) {
        #expect(Signals.number(of: text) == SIGUSR1)
    }

    @Test func commonNamesMapToTheirNumbers() {
        #expect(Signals.number(of: "TERM") == SIGTERM)
        #expect(Signals.number(of: "HUP") == 1)
        #expect(Signals.number(of: "KILL") == 9)
        #expect(Signals.number(of: "USR2") == 12)
        #expect(Signals.number(of: "STKFLT") == 16)
        #expect(Signals.number(of: "CONT") == 18)
        #expect(Signals.number(of: "SIGSTOP") == 19)
        #expect(Signals.number(of: "WINCH") == 28)
        #expect(Signals.number(of: "SYS") == 31)
    }

    @Test func realtimeSignalsAreRelativeToRTMIN() throws {
        let rtmin = try #require(Signals.number(of: "RTMIN"))
        let rtmax = try #require(Signals.number(of: "RTMAX"))
        #expect((32...35).contains(rtmin), "glibc reserves the first realtime signals")
        #expect(rtmax == 64)
        #expect(Signals.number(of: "RTMIN+2") == rtmin + 2)
        #expect(Signals.number(of: "SIGRTMIN+2") == rtmin + 2)
        #expect(Signals.number(of: "rtmin+0") == rtmin)
        #expect(Signals.number(of: "RTMAX-1") == rtmax - 1)
        #expect(Signals.number(of: "RTMIN+\(rtmax - rtmin)") == rtmax)
        #expect(Signals.number(of: "RTMIN+\(rtmax - rtmin + 1)") == nil, "past RTMAX")
        #expect(Signals.number(of: "RTMAX-\(rtmax - rtmin + 1)") == nil, "below RTMIN")
        #expect(Signals.number(of: "RTMIN+") == nil)
        #expect(Signals.number(of: "RTMIN+x") == nil)
    }

    @Test func hugeRealtimeOffsetsAreRefusedNotOverflowed() {
        // rtmin + k overflowed Int32 (a trap: SIGILL) before the offset was compared with
        // the range's width.
        #expect(Signals.number(of: "RTMIN+2147483647") == nil)
        #expect(Signals.number(of: "RTMAX-2147483647") == nil)
        #expect(Signals.number(of: "SIGRTMIN+2147483600") == nil)
    }

    @Test func realtimeOffsetsMustNotBeNegative() {
        // "RTMIN+-1" would be SIGRTMIN-1 (a signal glibc reserves for itself) and "RTMAX--1"
        // would be 65, past the last signal: both should be refused.
        #expect(Signals.number(of: "RTMIN+-1") == nil)
        #expect(Signals.number(of: "RTMAX--1") == nil)
    }

    @Test(arguments: ["bogus", "", "SIG", "USR", "USR3", "SIGSIGUSR1", " USR1", "0", "99", "65", "-1", "-9", "1.5"])
    func unknownSignalsAreNil(_ text: String) {
        #expect(Signals.number(of: text) == nil)
    }

    @Test func numbersWithinOneToNSIGMinusOneAreAccepted() {
        #expect(Signals.number(of: "1") == 1)
        #expect(Signals.number(of: "64") == 64)
        #expect(Signals.number(of: "34") == 34)
    }

    @Test func nameOfClassicSignals() {
        #expect(Signals.name(of: SIGUSR1) == "SIGUSR1")
        #expect(Signals.name(of: SIGKILL) == "SIGKILL")
        #expect(Signals.name(of: SIGTERM) == "SIGTERM")
        #expect(Signals.name(of: 16) == "SIGSTKFLT")
    }

    @Test func nameOfRealtimeSignals() throws {
        let rtmin = try #require(Signals.number(of: "RTMIN"))
        #expect(Signals.name(of: rtmin) == "SIGRTMIN")
        #expect(Signals.name(of: rtmin + 2) == "SIGRTMIN+2")
    }

    @Test func nameOfSomethingElseIsDescriptive() {
        #expect(Signals.name(of: 0) == "signal 0")
        #expect(Signals.name(of: 200) == "signal 200")
    }

    @Test func nameAndNumberRoundTripForEveryClassicSignal() {
        for n: Int32 in 1...31 {
            let name = Signals.name(of: n)
            #expect(name.hasPrefix("SIG"), "signal \(n)")
            #expect(Signals.number(of: name) == n, "\(name)")
        }
    }
}

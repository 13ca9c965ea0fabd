import CIceboxShim
import Glibc

/// Signal names and numbers, as `kill -l` spells them.
package enum Signals {
    static let table: [(String, Int32)] = [
        ("HUP", SIGHUP), ("INT", SIGINT), ("QUIT", SIGQUIT), ("ILL", SIGILL), ("TRAP", SIGTRAP),
        ("ABRT", SIGABRT), ("BUS", SIGBUS), ("FPE", SIGFPE), ("KILL", SIGKILL), ("USR1", SIGUSR1),
        ("SEGV", SIGSEGV), ("USR2", SIGUSR2), ("PIPE", SIGPIPE), ("ALRM", SIGALRM), ("TERM", SIGTERM),
        ("STKFLT", 16), ("CHLD", SIGCHLD), ("CONT", SIGCONT), ("STOP", SIGSTOP), ("TSTP", SIGTSTP),
        ("TTIN", SIGTTIN), ("TTOU", SIGTTOU), ("URG", SIGURG), ("XCPU", SIGXCPU), ("XFSZ", SIGXFSZ),
        ("VTALRM", SIGVTALRM), ("PROF", SIGPROF), ("WINCH", SIGWINCH), ("IO", SIGIO), ("PWR", SIGPWR), ("SYS", SIGSYS),
    ]

    /// The names `number(of:)` accepts, without the SIG prefix, in signal-number order, with
    /// RTMIN and RTMAX for the real-time range (shell completions offer them).
    package static var names: [String] { table.map(\.0) + ["RTMIN", "RTMAX"] }

    /// "SIGUSR1", "USR1", "usr1", "10" and "RTMIN+2" are all accepted.
    package static func number(of text: String) -> Int32? {
        if let n = Int32(text) { return (1..<Int32(icebox_nsig())).contains(n) ? n : nil }
        var name = text.uppercased()
        if name.hasPrefix("SIG") { name.removeFirst(3) }
        if let hit = table.first(where: { $0.0 == name }) { return hit.1 }
        let rtmin = icebox_sigrtmin(), rtmax = icebox_sigrtmax()
        if name == "RTMIN" { return rtmin }
        if name == "RTMAX" { return rtmax }
        // Compared against the range's width, so a huge offset cannot overflow (RTMIN+2147483647).
        if name.hasPrefix("RTMIN+"), let k = Int32(name.dropFirst(6)), k >= 0, k <= rtmax - rtmin { return rtmin + k }
        if name.hasPrefix("RTMAX-"), let k = Int32(name.dropFirst(6)), k >= 0, k <= rtmax - rtmin { return rtmax - k }
        return nil
    }

    package static func name(of number: Int32) -> String {
        if let hit = table.first(where: { $0.1 == number }) { return "SIG" + hit.0 }
        let rtmin = icebox_sigrtmin()
        if number >= rtmin && number <= icebox_sigrtmax() { return number == rtmin ? "SIGRTMIN" : "SIGRTMIN+\(number - rtmin)" }
        return "signal \(number)"
    }

    /// Blocks the given signals in this thread (and the threads it starts later) so they can
    /// be read from a signalfd instead of interrupting whatever runs.
    package static func block(_ signals: [Int32]) {
        var set = signalSet(signals)
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// A non-blocking, close-on-exec signalfd for signals already blocked.
    package static func signalFD(_ signals: [Int32]) throws(SystemError) -> Int32 {
        var set = signalSet(signals)
        return try systemCall("create a signalfd") { signalfd(-1, &set, Int32(SFD_NONBLOCK | SFD_CLOEXEC)) }
    }

    /// The set of `signals`; sigset_t() is empty, as sigemptyset makes it.
    private static func signalSet(_ signals: [Int32]) -> sigset_t {
        var set = sigset_t()
        for number in signals { _ = sigaddset(&set, number) }
        return set
    }

    /// Reads every pending signal number from a signalfd.
    package static func drain(signalFD fd: Int32) -> [Int32] {
        var out: [Int32] = []
        var info = signalfd_siginfo()
        while read(fd, &info, MemoryLayout<signalfd_siginfo>.size) == MemoryLayout<signalfd_siginfo>.size {
            out.append(Int32(info.ssi_signo))
        }
        return out
    }
}

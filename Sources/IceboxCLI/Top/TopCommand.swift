import Glibc
import IceboxCore
import IceboxSystem

/// icebox top: a full-screen live view of the apps, driven by the daemon's event log.
enum TopCommand: IceboxCommand {
    static let name = "top"
    static let spec = CommandSpec(
        name: name, usage: "icebox top",
        summary: "a live full-screen view of the apps; keys suspend, resume, switch, terminate, evict",
        options: [],
        details: """
            Keys: ↑/↓ or k/j select; s suspend; r resume; w switch to; t terminate and e evict
            (each asks y/n); / filter by name (Enter applies, Esc clears); 1-9 or </> sort by
            a column (the same number again, or i, reverses); ? help; q or Ctrl-C quit.
            Refreshed from the event log, not by asking the daemon; memory is read from each
            app's cgroup every 2 s. Needs a terminal on stdin and stdout and a TERM that can
            move the cursor (not dumb): exit 64 otherwise; use icebox ps or icebox log -f.
            """,
        operands: Operands(max: 0, text: "no operands"))

    static func run(_ args: ParsedArguments) throws(IceboxError) -> Int32 {
        let env = ProcessEnvironment.value
        if let why = TopTerminal.refusal(stdinIsTerminal: isatty(0) == 1, stdoutIsTerminal: isatty(1) == 1, term: env("TERM")) {
            throw IceboxError(.usage, why, hint: "for a snapshot use icebox ps, for the events as they come icebox log -f")
        }
        return try TopSession(terminal: TopTerminal(), color: Output.colorOut, environment: env).run()
    }
}

import CIceboxStart

/// This process's arguments, argv[0] first.
enum ProcessArguments {
    /// Decoded from the C strings glibc handed the program, invalid UTF-8 repaired (as
    /// CommandLine.arguments does). Not through CommandLine: its unsafeArgv is main-actor
    /// isolated, and CommandLine.arguments goes through the generic String(validating:),
    /// whose type metadata lookups every one-shot command paid at start-up.
    static var current: [String] {
        var count: Int32 = 0
        let argv = icebox_process_arguments(&count)
        var out: [String] = []
        out.reserveCapacity(Int(max(count, 0)))
        for i in 0..<Int(max(count, 0)) {
            out.append(argv[i].map { String(cString: $0) } ?? "")
        }
        return out
    }
}

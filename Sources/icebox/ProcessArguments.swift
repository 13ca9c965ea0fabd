import CIceboxStart

/// This process's arguments, argv[0] first.
enum ProcessArguments {
    /// Decoded from glibc's C strings, invalid UTF-8 repaired as CommandLine.arguments does, but
    /// not through it: its unsafeArgv is main-actor isolated, and its generic String(validating:)
    /// cost every one-shot command type metadata lookups at start-up.
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

import Glibc

/// getent(1), a dynamically linked program with the system's whole NSS, for a user or group a
/// static build does not find in the files database (`UserAccounts`). Bounded: an answer that takes
/// more than 5 s (a network directory that hangs) counts as none, and getent is killed and reaped.
enum Getent {
    static let deadlineNanos: UInt64 = 5_000_000_000
    static let paths = ["/usr/bin/getent", "/bin/getent"]

    /// The fields of the entry getent prints for `key` in `database` (passwd, group), or nil:
    /// not found, no getent, or no answer in time.
    static func entry(_ database: String, _ key: String) -> [Substring]? {
        run([database, "--", key])?.split(separator: ":", omittingEmptySubsequences: false)
    }

    /// The groups `getent initgroups` gives `user` (every NSS source's), or nil.
    static func initgroups(_ user: String) -> [gid_t]? {
        run(["initgroups", "--", user])?.split(separator: " ").dropFirst().compactMap { gid_t($0) }
    }

    /// The first line of getent's output when it exits 0.
    static func run(_ arguments: [String]) -> Substring? {
        guard let executable = paths.first(where: { access($0, X_OK) == 0 }), let pipe = try? PipePair() else { return nil }
        defer { close(pipe.readEnd) }
        var request = SpawnRequest(
            executable: executable, arguments: ["getent"] + arguments, environment: ["PATH=/usr/bin:/bin", "LC_ALL=C"])
        request.stdout = pipe.writeEnd
        let spawned = try? Spawner.spawn(request)
        close(pipe.writeEnd)
        guard let handle = spawned?.handle else { return nil }
        let deadline = Clock.monotonicNanos() &+ deadlineNanos
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while output.count < 1 << 20 {
            let now = Clock.monotonicNanos()
            guard now < deadline, let ready = try? Poll.wait(pipe.readEnd, events: Int16(POLLIN), timeoutNanos: deadline - now), ready != 0
            else { break }
            let n = retryingOnInterrupt { read(pipe.readEnd, &buffer, buffer.count) }
            if n <= 0 { break }
            output += buffer[0..<n]
        }
        // Its output is closed (it is exiting) or the time is up: reaped either way, killed
        // first if it is still there at the deadline.
        guard case .exited(0)? = (try? handle.wait(until: deadline)) ?? nil else {
            _ = try? handle.send(SIGKILL)
            _ = try? handle.wait(until: Clock.monotonicNanos() + 1_000_000_000)
            return nil
        }
        return String(decoding: output, as: UTF8.self).split(separator: "\n").first
    }
}

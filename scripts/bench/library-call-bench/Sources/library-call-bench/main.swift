import Foundation
import IceboxCore

// usage: library-call-bench ROUNDS BASE       the measurements, one JSON object a line; the
//                                            engines' directories under BASE (its file system
//                                            decides what the registry's fsync costs)
//        library-call-bench serve RUN STATE   an engine in this process until stdin closes
//
// For each of three callers (an in-process Supervisor, its async form, an IceboxClient of an
// engine in another process), ROUNDS rounds of suspend(grace: .zero) then resume() of one
// idle `sleep` app, each call timed around the call (ContinuousClock) and set against the
// kernel confirmation time the same result reports (freezeTime, thawTime). The overhead of
// the library call is the difference: the client's encode/connect/send, the daemon's turn
// of its loop and its reply, the client's decode and result.

func nanos(_ d: Duration) -> Int64 {
    let (s, a) = d.components
    return s * 1_000_000_000 + a / 1_000_000_000
}

/// A line on standard output, unbuffered (the parent reads it as it comes).
func say(_ line: String) {
    let text = line + "\n"
    _ = text.withCString { write(1, $0, strlen($0)) }
}

func emit(_ caller: String, _ op: String, call: Duration, kernel: Duration) {
    say(#"{"caller":"\#(caller)","op":"\#(op)","call_ns":\#(nanos(call)),"kernel_ns":\#(nanos(kernel))}"#)
}

let args = CommandLine.arguments
if args.count == 4, args[1] == "serve" {
    let supervisor = try Supervisor.start(runtimeDirectory: args[2], stateDirectory: args[3])
    say("ready")
    while readLine() != nil {}
    try supervisor.stop()
    exit(0)
}
let rounds = args.count > 1 ? Int(args[1]) ?? 200 : 200
let base = (args.count > 2 ? args[2] : "/tmp") + "/icebox-library-call-\(getpid())"
let clock = ContinuousClock()
// A thawed task counts as frozen until it has run: a freeze asked for before then would find
// it frozen already. 5 ms between calls lets it run.
let settle = Duration.milliseconds(5)

/// `ping` is the bare exchange (connect, request, the daemon's turn, reply), no lifecycle:
/// what is left of a call's overhead above it is the daemon's work for the step (its
/// registry record of intent, the event log) and the result's.
func measure(
    _ caller: String, ping: () throws -> Void, suspend: () throws -> SuspendResult, resume: () throws -> ResumeResult
) throws {
    for _ in 0..<rounds {
        let pinged = clock.now
        try ping()
        emit(caller, "ping", call: clock.now - pinged, kernel: .zero)
        var start = clock.now
        let s = try suspend()
        emit(caller, "suspend", call: clock.now - start, kernel: s.freezeTime)
        Thread.sleep(forTimeInterval: 0.005)
        start = clock.now
        let r = try resume()
        emit(caller, "resume", call: clock.now - start, kernel: r.thawTime ?? .zero)
        Thread.sleep(forTimeInterval: 0.005)
    }
}

func measureAsync(_ caller: String, _ supervisor: Supervisor) async throws {
    for _ in 0..<rounds {
        var start = clock.now
        let s = try await supervisor.suspend("nap", grace: .zero)
        emit(caller, "suspend", call: clock.now - start, kernel: s.freezeTime)
        try await Task.sleep(for: settle)
        start = clock.now
        let r = try await supervisor.resume("nap")
        emit(caller, "resume", call: clock.now - start, kernel: r.thawTime ?? .zero)
        try await Task.sleep(for: settle)
    }
}

var options = LaunchOptions(name: "nap", command: ["sleep", "100000"])
options.backgroundSignal = NoticeSignal.none

// In process.
let supervisor = try Supervisor.start(runtimeDirectory: base + "/in/run", stateDirectory: base + "/in/state")
_ = try supervisor.launch(options)
try measure(
    "Supervisor", ping: { try supervisor.ping() }, suspend: { try supervisor.suspend("nap", grace: .zero) },
    resume: { try supervisor.resume("nap") })
try await measureAsync("Supervisor (async)", supervisor)
try supervisor.stop()

// An engine in another process (this program, `serve`), reached through its control socket.
let server = Process()
server.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
server.arguments = ["serve", base + "/out/run", base + "/out/state"]
let toServer = Pipe(), fromServer = Pipe()
server.standardInput = toServer
server.standardOutput = fromServer
try server.run()
_ = fromServer.fileHandleForReading.availableData  // "ready"
let client = IceboxClient(runtimeDirectory: base + "/out/run", stateDirectory: base + "/out/state")
_ = try client.launch(options)
try measure(
    "IceboxClient (another process)", ping: { try client.ping() }, suspend: { try client.suspend("nap", grace: .zero) },
    resume: { try client.resume("nap") })
try toServer.fileHandleForWriting.close()
server.waitUntilExit()
try? FileManager.default.removeItem(atPath: base)

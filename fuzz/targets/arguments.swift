// A libFuzzer target (scripts/fuzz builds and runs it; fuzz/README.md).
// The command line: the first byte picks a command's spec, the rest is its arguments
// separated by NUL bytes; every option value then goes through the value parsers the
// commands use (durations, counts, --since/--until times).
import IceboxCore

@testable import IceboxCLI

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    guard let first = bytes.first else { return 0 }
    let commands = IceboxMain.commands
    let spec = commands[Int(first) % commands.count].spec
    let args = bytes.dropFirst().split(separator: 0, omittingEmptySubsequences: false).map {
        String(decoding: $0, as: UTF8.self)
    }
    guard let parsed = try? ArgumentParser.parse(args, spec: spec) else { return 0 }
    for (name, value) in zip(parsed.valueNames, parsed.valueTexts) {
        _ = try? parsed.duration(name)
        _ = try? BenchCommand.count(parsed, name, default: 1, minimum: 0)
        _ = try? LogCommand.count(value, option: name)
        _ = TimeText.parseBound(value, nowWallNanos: 1_800_000_000_000_000_000, offset: { _ in 3600 })
        _ = try? ArgumentParser.choice(value, option: name, among: ["auto", "always", "never"])
    }
    return 0
}

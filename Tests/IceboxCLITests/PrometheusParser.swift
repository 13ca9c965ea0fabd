import Foundation
import Glibc

/// The Prometheus project's own Python client parses what icebox writes: a real parser,
/// not our reading of the format. scripts/lib/setup.sh installs it (Debian's
/// python3-prometheus-client, which serves /usr/bin/python3 even where `python3` on PATH is
/// another interpreter).
enum PrometheusParser {
    struct Family: Decodable {
        var type: String
        var help: String
        var unit: String
        var samples: [Sample]

        /// The samples named `name` whose labels include `labels`.
        func samples(_ name: String, _ labels: [String: String] = [:]) -> [Sample] {
            samples.filter { s in s.name == name && labels.allSatisfy { s.labels[$0.key] == $0.value } }
        }

        /// The value of the one sample named `name` with exactly `labels`.
        func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
            samples.first { $0.name == name && $0.labels == labels }?.value
        }
    }

    struct Sample: Decodable {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    /// A Python that can import prometheus_client, or nil.
    static let python: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let candidates = path.split(separator: ":").map { "\($0)/python3" } + ["/usr/bin/python3"]
        return candidates.first { access($0, X_OK) == 0 && (try? run($0, ["-c", "import prometheus_client"]).status) == 0 }
    }()

    static var unavailableReason: String? {
        python == nil ? "no python3 with prometheus_client (scripts/lib/setup.sh installs python3-prometheus-client)" : nil
    }

    static let script = """
        import json, sys
        if sys.argv[1] == 'openmetrics':
            from prometheus_client.openmetrics.parser import text_string_to_metric_families
        else:
            from prometheus_client.parser import text_string_to_metric_families
        out = {}
        for f in text_string_to_metric_families(open(sys.argv[2]).read()):
            if f.name in out:
                sys.exit('family twice: ' + f.name)
            out[f.name] = {'type': f.type, 'help': f.documentation, 'unit': f.unit,
                           'samples': [{'name': s.name, 'labels': s.labels, 'value': s.value} for s in f.samples]}
        print(json.dumps(out))
        """

    /// The families in `text`, by name (a counter's without `_total`), as the parser for
    /// the format sees them. Throws with the parser's complaint if it rejects the text.
    static func parse(_ text: String, openMetrics: Bool = false, scratch dir: String) throws -> [String: Family] {
        guard let python else { throw ParseError(message: unavailableReason ?? "") }
        let file = dir + "/exposition-\(UUID().uuidString).txt"
        try text.write(toFile: file, atomically: false, encoding: .utf8)
        defer { unlink(file) }
        let result = try run(python, ["-c", script, openMetrics ? "openmetrics" : "prometheus", file])
        guard result.status == 0 else { throw ParseError(message: "prometheus_client rejected the text: \(result.stderr)\n\(text)") }
        return try JSONDecoder().decode([String: Family].self, from: Data(result.stdout.utf8))
    }

    struct ParseError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    static func run(_ executable: String, _ args: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = args
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        nonisolated(unsafe) var errData = Data()  // written by the reader below, read after it signals
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            errData = err.fileHandleForReading.readDataToEndOfFile()
            done.signal()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        done.wait()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
    }
}

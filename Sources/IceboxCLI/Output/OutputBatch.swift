/// Lines for stdout, written in batches: a log of hundreds of thousands of lines is not a
/// write(2) a line. Whole lines only, so output still interleaves cleanly.
struct OutputBatch {
    private var bytes: [UInt8] = []

    mutating func add(_ line: String) {
        bytes.append(contentsOf: line.utf8)
        bytes.append(10)
        if bytes.count >= 1 << 16 { flush() }
    }

    mutating func flush() {
        guard !bytes.isEmpty else { return }
        Output.writeAll(1, bytes)
        bytes.removeAll(keepingCapacity: true)
    }
}

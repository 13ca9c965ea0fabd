/// Summary statistics of one measured quantity, as hyperfine reports them: mean ± σ,
/// median, min … max, p95, and which samples are outliers.
package struct Summary: Codable, Sendable, Equatable {
    package var mean: UInt64
    package var stddev: UInt64
    package var median: UInt64
    package var min: UInt64
    package var max: UInt64
    package var p95: UInt64
    package var samples: [UInt64]
    package var outliers: Int

    /// nil for no samples.
    package init?(samples: [UInt64]) {
        guard !samples.isEmpty else { return nil }
        self.samples = samples
        let sorted = samples.sorted()
        let values = sorted.map { Double($0) }  // not map(Double.init): that picks init(bitPattern:)
        let mean = values.reduce(0, +) / Double(values.count)
        // Sample standard deviation (n − 1), as hyperfine reports it.
        let variance = values.count > 1 ? values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(values.count - 1) : 0
        self.mean = UInt64(mean.rounded())
        self.stddev = UInt64(variance.squareRoot().rounded())
        self.median = Summary.quantile(sorted, 0.5)
        self.min = sorted.first!
        self.max = sorted.last!
        self.p95 = Summary.quantile(sorted, 0.95)
        self.outliers = Summary.outlierCount(values, median: Double(self.median))
    }

    /// Linear interpolation between closest ranks.
    static func quantile(_ sorted: [UInt64], _ q: Double) -> UInt64 {
        if sorted.count == 1 { return sorted[0] }
        let position = q * Double(sorted.count - 1)
        let lower = Int(position)
        let upper = Swift.min(lower + 1, sorted.count - 1)
        let fraction = position - Double(lower)
        return UInt64((Double(sorted[lower]) * (1 - fraction) + Double(sorted[upper]) * fraction).rounded())
    }

    /// Samples whose modified Z-score (Iglewicz and Hoaglin: 0.6745·|x − median| / MAD)
    /// exceeds 3.5: far enough from the rest that something else was going on.
    static func outlierCount(_ values: [Double], median: Double) -> Int {
        let deviations = values.map { abs($0 - median) }.sorted()
        let mad =
            deviations.count % 2 == 1
            ? deviations[deviations.count / 2]
            : (deviations[deviations.count / 2 - 1] + deviations[deviations.count / 2]) / 2
        guard mad > 0 else { return 0 }
        return values.filter { 0.6745 * abs($0 - median) / mad > 3.5 }.count
    }

    /// σ relative to the mean: above 0.5 the figures are too noisy to trust one by one.
    package var coefficientOfVariation: Double { mean == 0 ? 0 : Double(stddev) / Double(mean) }
}

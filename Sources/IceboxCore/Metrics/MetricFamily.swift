/// One metric family as the Prometheus data model has it: a name, a type, a help text, an optional
/// unit and its samples. Built by `DaemonMetrics`, written out by `MetricsExposition` in either
/// text format.
package struct MetricFamily: Sendable, Equatable {
    package enum Kind: String, Sendable {
        case gauge, counter, histogram
    }

    /// The family's name; a counter's without `_total` (its samples carry the suffix), as
    /// OpenMetrics names it. The Prometheus text format puts `_total` back in HELP and TYPE.
    package var name: String
    package var kind: Kind
    package var help: String
    /// The base unit (OpenMetrics' UNIT line), a suffix of `name`: "seconds" or "bytes".
    package var unit: String?
    package var samples: [MetricSample]

    package init(name: String, kind: Kind, help: String, unit: String? = nil, samples: [MetricSample] = []) {
        precondition(unit.map { name.hasSuffix("_" + $0) } ?? true, "a metric's unit must end its name")
        self.name = name
        self.kind = kind
        self.help = help
        self.unit = unit
        self.samples = samples
    }

    /// A gauge with one sample per label set.
    package static func gauge(
        _ name: String, unit: String? = nil, help: String, _ series: [(labels: [MetricLabel], value: MetricValue)]
    ) -> MetricFamily {
        MetricFamily(
            name: name, kind: .gauge, help: help, unit: unit,
            samples: series.map { MetricSample(suffix: "", labels: $0.labels, value: $0.value) })
    }

    /// A counter: `name` without `_total`; its samples get the suffix.
    package static func counter(
        _ name: String, unit: String? = nil, help: String, _ series: [(labels: [MetricLabel], value: MetricValue)]
    ) -> MetricFamily {
        precondition(!name.hasSuffix("_total"), "a counter family is named without _total")
        return MetricFamily(
            name: name, kind: .counter, help: help, unit: unit,
            samples: series.map { MetricSample(suffix: "_total", labels: $0.labels, value: $0.value) })
    }

    /// A histogram of durations in seconds: per label set, a cumulative `_bucket` for every
    /// bound and +Inf, then `_sum` and `_count`.
    package static func histogram(_ name: String, help: String, _ series: [(labels: [MetricLabel], histogram: LatencyHistogram)])
        -> MetricFamily
    {
        var samples: [MetricSample] = []
        for (labels, histogram) in series {
            let cumulative = histogram.cumulativeCounts
            for (i, bound) in histogram.boundsNanos.enumerated() {
                samples.append(
                    MetricSample(
                        suffix: "_bucket", labels: labels + [MetricLabel("le", .seconds(nanos: bound))], value: .count(cumulative[i])))
            }
            samples.append(MetricSample(suffix: "_bucket", labels: labels + [MetricLabel("le", "+Inf")], value: .count(histogram.count)))
            samples.append(MetricSample(suffix: "_sum", labels: labels, value: .seconds(nanos: histogram.sumNanos)))
            samples.append(MetricSample(suffix: "_count", labels: labels, value: .count(histogram.count)))
        }
        return MetricFamily(name: name, kind: .histogram, help: help, unit: "seconds", samples: samples)
    }
}

/// One sample line: the family's name plus `suffix`, its labels, its value.
package struct MetricSample: Sendable, Equatable {
    package var suffix: String
    package var labels: [MetricLabel]
    package var value: MetricValue
}

/// A label: a fixed name (an identifier of ours) and a value from anywhere (an app's name), escaped
/// when written.
package struct MetricLabel: Sendable, Equatable {
    package var name: String
    package var value: String

    package init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }

    /// A label whose value is a number (a histogram's `le`), written as a sample value is.
    package init(_ name: String, _ value: MetricValue) {
        self.init(name, value.text)
    }
}

/// A sample's value. Integers and nanoseconds stay integers until they are written, so a
/// count or a bucket bound is exact in the text (no 0.30000000000000004).
package enum MetricValue: Sendable, Equatable {
    case count(UInt64)
    /// A duration or a point in time in nanoseconds, written in seconds.
    case seconds(nanos: UInt64)

    /// The value as the text formats write it: "12", "0.00005", "1712345678.25".
    package var text: String {
        switch self {
        case .count(let n): return String(n)
        case .seconds(let nanos):
            let whole = String(nanos / 1_000_000_000)
            let fraction = nanos % 1_000_000_000
            if fraction == 0 { return whole }
            var digits = String(fraction)
            digits = String(repeating: "0", count: 9 - digits.count) + digits
            while digits.hasSuffix("0") { digits.removeLast() }
            return whole + "." + digits
        }
    }
}

/// The two text formats Prometheus scrapes.
package enum MetricsFormat: String, Codable, Sendable, CaseIterable {
    /// The Prometheus text format, version 0.0.4: what Prometheus, node_exporter's textfile
    /// collector and every scraper read.
    case prometheus
    /// OpenMetrics 1.0 text: UNIT lines, counters typed by their name without `_total`, and `# EOF`
    /// at the end.
    case openMetrics = "openmetrics"
}

/// Writes metric families as text. Pure: the daemon gathers the figures, this only spells
/// them, so the spelling (escaping, counter names, the terminator) is unit-tested.
package enum MetricsExposition {
    package static func render(_ families: [MetricFamily], format: MetricsFormat) -> String {
        var text = ""
        for family in families {
            // In the 0.0.4 format a counter's metadata names its samples (with _total).
            let metaName = format == .prometheus && family.kind == .counter ? family.name + "_total" : family.name
            text += "# HELP \(metaName) \(escapeHelp(family.help, format: format))\n"
            text += "# TYPE \(metaName) \(family.kind.rawValue)\n"
            if format == .openMetrics, let unit = family.unit { text += "# UNIT \(metaName) \(unit)\n" }
            for sample in family.samples {
                text += family.name + sample.suffix
                if !sample.labels.isEmpty {
                    text += "{" + sample.labels.map { "\($0.name)=\"\(escapeLabelValue($0.value))\"" }.joined(separator: ",") + "}"
                }
                text += " " + sample.value.text + "\n"
            }
        }
        if format == .openMetrics { text += "# EOF\n" }
        return text
    }

    /// A label value as both formats require: backslash, double quote and line feed escaped.
    package static func escapeLabelValue(_ value: String) -> String {
        escape(value, quotes: true)
    }

    /// A HELP text: backslash and line feed escaped; OpenMetrics escapes double quotes too
    /// (the 0.0.4 format would show such a backslash literally).
    package static func escapeHelp(_ help: String, format: MetricsFormat) -> String {
        escape(help, quotes: format == .openMetrics)
    }

    static func escape(_ text: String, quotes: Bool) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for c in text.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\"" where quotes: out += "\\\""
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }
}

import IceboxCore
import IceboxSystem

/// `ps --format`: a Go-template-like line with `{{.Field}}` actions, as `docker ps --format`
/// takes: `{{.Name}}\t{{.State}}`. `\t`, `\n` and `\\` are a tab, a newline and a backslash;
/// `{{json .}}` is the whole record as JSON; a leading `table ` prints a header row (LAST_FREEZE
/// for .LastFreeze) and aligns the tab-separated columns (`table` alone: the usual table).
/// Unknown fields are refused before anything runs; rendering switches on `Field`, not names.
struct FormatTemplate<Field: TemplateField>: Equatable {
    enum Piece: Equatable {
        case text(String)
        case field(Field)
        case json
    }

    var pieces: [Piece]
    var table: Bool
    /// Whether `{{json .}}` appears: rendering then needs the whole record.
    var usesJSON: Bool { pieces.contains(.json) }

    static func parse(_ source: String) throws(IceboxError) -> FormatTemplate {
        let fields = Field.allCases.map(\.rawValue)
        var text = Substring(source)
        let table = text == "table" || text.hasPrefix("table ")
        if table { text = text.dropFirst(5).drop { $0 == " " } }
        var pieces: [Piece] = []
        var literal = ""
        while !text.isEmpty {
            if text.hasPrefix("{{") {
                guard let end = text.firstRange(of: "}}") else {
                    throw IceboxError(.usage, "--format: '{{' without '}}' in '\(source)'", hint: "write fields as {{.Name}}")
                }
                let action = text[text.index(text.startIndex, offsetBy: 2)..<end.lowerBound].trimmingCharacters(in: " ")
                text = text[end.upperBound...]
                if !literal.isEmpty { pieces.append(.text(literal)); literal = "" }
                if action == "json ." {
                    pieces.append(.json)
                } else if action.hasPrefix("."), let field = Field(rawValue: String(action.dropFirst())) {
                    pieces.append(.field(field))
                } else {
                    let typed = action.replacingPrefix(".")
                    let near = Suggestions.closest(to: typed, among: fields)
                    throw IceboxError(
                        .usage, "--format: unknown field '{{\(action)}}'" + (near.isEmpty ? "" : "; did you mean '{{.\(near[0])}}'?"),
                        hint: "the fields are " + fields.map { "." + $0 }.joined(separator: " ") + ", and {{json .}}")
                }
                continue
            }
            if text.hasPrefix("\\"), let next = text.dropFirst().first, let replaced = ["t": "\t", "n": "\n", "\\": "\\"][next] {
                literal += replaced
                text = text.dropFirst(2)
                continue
            }
            literal.append(text.removeFirst())
        }
        if !literal.isEmpty { pieces.append(.text(literal)) }
        return FormatTemplate(pieces: pieces, table: table)
    }

    func render(_ value: (Field) -> String, json: () -> String) -> String {
        var out = ""
        for piece in pieces {
            switch piece {
            case .text(let t): out += t
            case .field(let f): out += value(f)
            case .json: out += json()
            }
        }
        return out
    }

    var header: String { render({ Self.headerName($0.rawValue) }, json: { "JSON" }) }

    /// LastFreeze → LAST_FREEZE, PID → PID, MemoryBytes → MEMORY_BYTES.
    static func headerName(_ field: String) -> String {
        var out = ""
        var previous: Character?
        for c in field {
            if c.isUppercase, let p = previous, p.isLowercase { out += "_" }
            out += c.uppercased()
            previous = c
        }
        return out
    }
}

/// What a template's `{{.Field}}` may name: an enum whose raw values are the field names.
protocol TemplateField: RawRepresentable, CaseIterable, Equatable where RawValue == String {}

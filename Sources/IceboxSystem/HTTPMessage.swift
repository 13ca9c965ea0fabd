/// The parts of an http:// URL a readiness probe needs. The host is an IPv4 or IPv6 literal
/// (IPv6 in brackets) or "localhost": host names are not resolved (see `IPAddress`).
package struct HTTPURL: Equatable, Sendable {
    /// As written, without brackets: "127.0.0.1", "::1" or "localhost".
    package let host: String
    package let port: UInt16
    /// The path and query, "/" when the URL has none; a #fragment is dropped (never sent).
    package let path: String
    package let address: IPAddress

    /// Why a URL cannot be probed, in words for the user.
    package struct ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        package var description: String
        init(_ description: String) { self.description = description }
    }

    package init?(_ text: String) {
        guard let url = try? HTTPURL(parsing: text) else { return nil }
        self = url
    }

    package init(parsing text: String) throws(ParseError) {
        guard text.hasPrefix("http://") else {
            if text.hasPrefix("https://") { throw ParseError("https is not supported: probe the server's plain http port") }
            throw ParseError("'\(text)' does not start with http://")
        }
        var rest = text.dropFirst(7)
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        let target = rest.dropFirst(authority.count)
        if authority.contains("@") { throw ParseError("a user name in the URL is not supported") }

        var hostText: Substring
        var portText: Substring?
        let bracketed = authority.hasPrefix("[")
        if bracketed {
            guard let close = authority.firstIndex(of: "]") else { throw ParseError("'\(authority)': the [ around the host is not closed") }
            hostText = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw ParseError("'\(authority)': expected :PORT after the ]") }
                portText = after.dropFirst()
            }
        } else if let colon = authority.firstIndex(of: ":") {
            hostText = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
            if portText?.contains(":") == true { throw ParseError("an IPv6 address goes in brackets: http://[::1]:8080/") }
        } else {
            hostText = authority
        }

        if hostText.isEmpty { throw ParseError("'\(text)' has no host") }
        guard let address = IPAddress(String(hostText)), bracketed == (address.family == .v6) else {
            throw ParseError(
                "host '\(hostText)' is not an IP address or localhost: readiness probes do not resolve host names"
                    + " (use 127.0.0.1 or [::1])")
        }
        var port: UInt16 = 80
        if let portText {
            guard !portText.isEmpty, portText.allSatisfy({ $0.isASCII && $0.isNumber }), let p = UInt16(portText), p > 0 else {
                throw ParseError("'\(portText)' is not a port (1-65535)")
            }
            port = p
        }
        // The path goes into the request line verbatim, so nothing may break that line.
        let path = target.isEmpty ? "/" : target.hasPrefix("?") ? "/" + target : String(target)
        guard path.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f }) else {
            throw ParseError("the path has spaces, control or non-ASCII characters: percent-encode them")
        }
        self.host = String(hostText)
        self.port = port
        self.path = path
        self.address = address
    }

    /// The Host header: the host as written (IPv6 in brackets), with the port unless it is 80.
    package var hostHeader: String {
        let name = address.family == .v6 ? "[\(host)]" : host
        return port == 80 ? name : "\(name):\(port)"
    }

    /// What a readiness check sends. `Connection: close` asks the server to end the exchange
    /// itself, so no idle connection is left behind in the app after the check.
    package var readinessRequest: String {
        "GET \(path) HTTP/1.1\r\nHost: \(hostHeader)\r\nUser-Agent: icebox\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    }
}

/// The first line of an HTTP response, "HTTP/1.1 200 OK": all a readiness check reads.
package struct HTTPStatusLine: Equatable, Sendable, CustomStringConvertible {
    package var version: String
    package var status: Int
    package var reason: String

    /// A 2xx status: the server is ready. A redirect or an error is not.
    package var isSuccess: Bool { (200...299).contains(status) }

    package var description: String { reason.isEmpty ? "\(version) \(status)" : "\(version) \(status) \(reason)" }
}

extension HTTPStatusLine {
    /// Parses one status line without its line ending. Lenient where servers differ (no
    /// reason phrase, extra spaces), strict where it matters: "HTTP/" and three digits.
    package init?(_ line: some StringProtocol) {
        let versionText = line.prefix { $0 != " " }
        let afterVersion = line.dropFirst(versionText.count).drop { $0 == " " }
        let code = afterVersion.prefix { $0 != " " }
        let reasonText = afterVersion.dropFirst(code.count).drop { $0 == " " }
        let number = versionText.dropFirst(5)
        guard versionText.hasPrefix("HTTP/"), !number.isEmpty, number.allSatisfy({ $0 == "." || ($0.isASCII && $0.isNumber) }),
            code.count == 3, code.allSatisfy({ $0.isASCII && $0.isNumber }), let status = Int(code)
        else { return nil }
        version = String(versionText)
        self.status = status
        reason = String(reasonText)
    }

    /// Where reading a response stands.
    package enum Scan: Equatable, Sendable {
        /// No line ending yet: read more.
        case incomplete
        case complete(HTTPStatusLine)
        /// Not an HTTP response, or a first line longer than the limit: a failed attempt.
        case malformed(String)
    }

    /// The most bytes a reader keeps while looking for the status line's end (LF). A server
    /// that sends more without one has failed the check, so the buffer stays bounded.
    package static let maxLength = 4096

    /// Looks for the status line at the start of what has arrived. `atEnd`: the peer closed,
    /// so a line without its ending is all there will be (as HTTP/1.0 servers may send).
    package static func scan(_ bytes: [UInt8], atEnd: Bool, maxLength: Int = maxLength) -> Scan {
        var line: ArraySlice<UInt8>
        if let lf = bytes.prefix(maxLength).firstIndex(of: 10) {
            line = bytes[..<lf]
        } else if bytes.count >= maxLength {
            return .malformed("the first line of the answer is longer than \(maxLength) bytes")
        } else if atEnd {
            if bytes.isEmpty { return .malformed("the server closed the connection without answering") }
            line = bytes[...]
        } else {
            return .incomplete
        }
        if line.last == 13 { line = line.dropLast() }  // CR
        let text = String(decoding: line, as: UTF8.self)
        guard let status = HTTPStatusLine(text) else {
            let shown = String(String.UnicodeScalarView(text.unicodeScalars.prefix(40).map { (0x20..<0x7f).contains($0.value) ? $0 : "?" }))
            return .malformed("the answer is not an HTTP status line: '\(shown)'")
        }
        return .complete(status)
    }
}

import Testing

@testable import IceboxSystem

/// The pure half of the HTTP readiness check: URLs, the request, the status line.
@Suite("HTTP readiness messages")
struct HTTPMessageTests {
    @Test("status lines: 2xx is ready; no reason phrase and extra spaces are fine")
    func statusLines() throws {
        let ok = try #require(HTTPStatusLine("HTTP/1.1 200 OK"))
        #expect(ok == HTTPStatusLine(version: "HTTP/1.1", status: 200, reason: "OK"))
        #expect(ok.isSuccess)
        #expect(HTTPStatusLine("HTTP/1.0 204")?.isSuccess == true)
        #expect(HTTPStatusLine("HTTP/1.1  299  Whatever  it says")?.reason == "Whatever  it says")
        #expect(HTTPStatusLine("HTTP/2 200")?.status == 200)
        for code in [100, 199, 301, 404, 500, 503] {
            #expect(HTTPStatusLine("HTTP/1.1 \(code) X")?.isSuccess == false, "\(code)")
        }
    }

    @Test(
        "not status lines",
        arguments: [
            "", "HTTP/1.1", "HTTP/1.1 ", "HTTP/ 200 OK", "HTTPS/1.1 200 OK", "ICY 200 OK", "http/1.1 200 OK",
            "HTTP/1.1 20 OK", "HTTP/1.1 2000 OK", "HTTP/1.1 +20 OK", "HTTP/1.1 2x0 OK", " HTTP/1.1 200 OK", "HTTP/1.x 200 OK",
            "<html>",
        ])
    func notStatusLines(_ line: String) {
        #expect(HTTPStatusLine(line) == nil)
    }

    @Test("scanning what has arrived: incomplete, CRLF or LF, closed early, too long")
    func scan() {
        func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }
        let ok = HTTPStatusLine(version: "HTTP/1.1", status: 200, reason: "OK")
        #expect(HTTPStatusLine.scan(bytes("HTTP/1.1 200"), atEnd: false) == .incomplete)
        #expect(HTTPStatusLine.scan([], atEnd: false) == .incomplete)
        #expect(HTTPStatusLine.scan(bytes("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), atEnd: false) == .complete(ok))
        #expect(HTTPStatusLine.scan(bytes("HTTP/1.1 200 OK\n"), atEnd: false) == .complete(ok))
        #expect(HTTPStatusLine.scan(bytes("HTTP/1.1 200 OK\r"), atEnd: false) == .incomplete)
        // A server that closes after a line without its ending (HTTP/1.0 style).
        #expect(HTTPStatusLine.scan(bytes("HTTP/1.1 200 OK"), atEnd: true) == .complete(ok))
        guard case .malformed(let closed) = HTTPStatusLine.scan([], atEnd: true) else {
            Issue.record("an empty answer must fail")
            return
        }
        #expect(closed.contains("without answering"))
        guard case .malformed(let junk) = HTTPStatusLine.scan(bytes("SSH-2.0-OpenSSH_9.6\r\n"), atEnd: false) else {
            Issue.record("a non-HTTP answer must fail")
            return
        }
        #expect(junk.contains("'SSH-2.0-OpenSSH_9.6'"))
        // The limit counts the line ending: exactly at the limit is fine, one more is not.
        let line = "HTTP/1.1 200 " + String(repeating: "x", count: 20)
        let atLimit = bytes(line + "\r\n")
        #expect(HTTPStatusLine.scan(atLimit, atEnd: false, maxLength: atLimit.count) != .incomplete)
        guard case .complete = HTTPStatusLine.scan(atLimit, atEnd: false, maxLength: atLimit.count) else {
            Issue.record("a line that fits must parse")
            return
        }
        guard case .malformed(let long) = HTTPStatusLine.scan(atLimit, atEnd: false, maxLength: atLimit.count - 1) else {
            Issue.record("a line past the limit must fail")
            return
        }
        #expect(long.contains("longer than"))
        let flood = [UInt8](repeating: UInt8(ascii: "x"), count: HTTPStatusLine.maxLength)
        guard case .malformed = HTTPStatusLine.scan(flood, atEnd: false) else {
            Issue.record("\(HTTPStatusLine.maxLength) bytes without a newline must fail")
            return
        }
    }

    @Test("URLs: IPv4, IPv6 in brackets, localhost; path, query and fragment")
    func urls() throws {
        let v4 = try HTTPURL(parsing: "http://127.0.0.1:8080/health?deep=1#top")
        #expect(v4.host == "127.0.0.1")
        #expect(v4.port == 8080)
        #expect(v4.path == "/health?deep=1")
        #expect(v4.address == IPAddress("127.0.0.1"))
        let bare = try HTTPURL(parsing: "http://127.0.0.1")
        #expect(bare.port == 80 && bare.path == "/")
        #expect(try HTTPURL(parsing: "http://127.0.0.1:9?x").path == "/?x")
        let v6 = try HTTPURL(parsing: "http://[::1]:8000/ready")
        #expect(v6.host == "::1" && v6.port == 8000 && v6.path == "/ready")
        #expect(v6.address.family == .v6)
        #expect(try HTTPURL(parsing: "http://[::1]").port == 80)
        let local = try HTTPURL(parsing: "http://localhost:3000/")
        #expect(local.address == .loopback)
        #expect(local.host == "localhost")
    }

    @Test(
        "URLs that cannot be probed say why",
        arguments: [
            ("https://127.0.0.1/", "https is not supported"),
            ("ftp://127.0.0.1/", "does not start with http://"),
            ("http://example.com/", "do not resolve host names"),
            ("http://web.internal:8080/", "do not resolve host names"),
            ("http://[127.0.0.1]:80/", "do not resolve host names"),
            ("http://::1/", "IPv6 address goes in brackets"),
            ("http://[::1:80/", "not closed"),
            ("http://[::1]x/", "expected :PORT"),
            ("http://:8080/", "has no host"),
            ("http://127.0.0.1:0/", "not a port"),
            ("http://127.0.0.1:65536/", "not a port"),
            ("http://127.0.0.1:+80/", "not a port"),
            ("http://127.0.0.1:/", "not a port"),
            ("http://user@127.0.0.1/", "user name"),
            ("http://127.0.0.1/a b", "percent-encode"),
            ("http://127.0.0.1/a\r\nX: y", "percent-encode"),
            ("http://127.0.0.1/caf\u{e9}", "percent-encode"),
        ])
    func badURLs(_ text: String, _ why: String) {
        #expect(HTTPURL(text) == nil)
        #expect {
            _ = try HTTPURL(parsing: text)
        } throws: { error in
            (error as? HTTPURL.ParseError)?.description.contains(why) == true
        }
    }

    @Test("the request: GET path HTTP/1.1 with Host and Connection: close")
    func request() throws {
        let url = try HTTPURL(parsing: "http://127.0.0.1:8080/health?deep=1")
        #expect(
            url.readinessRequest
                == "GET /health?deep=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: icebox\r\nAccept: */*\r\nConnection: close\r\n\r\n")
        #expect(try HTTPURL(parsing: "http://[::1]:8000/").hostHeader == "[::1]:8000")
        #expect(try HTTPURL(parsing: "http://localhost/").hostHeader == "localhost")
        #expect(try HTTPURL(parsing: "http://127.0.0.1:80/").hostHeader == "127.0.0.1")
    }

    @Test("IP addresses: literals and localhost, never names")
    func addresses() {
        #expect(IPAddress("127.0.0.1")?.family == .v4)
        #expect(IPAddress("::1")?.family == .v6)
        #expect(IPAddress("::1")?.description == "[::1]")
        #expect(IPAddress("localhost") == .loopback)
        #expect(IPAddress("localhost.localdomain") == nil)
        #expect(IPAddress("[::1]") == nil)
        #expect(IPAddress("127.1") == nil)
        #expect(IPAddress("") == nil)
    }
}

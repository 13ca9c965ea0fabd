import Glibc
import IceboxCore
import Testing

/// The environment as a table, read from `environ` byte by byte.
struct ProcessEnvironmentTests {
    @Test("a value keeps every '=' after the first, and bytes a Character split would join")
    func valuesWhole() {
        let name = "ICEBOX_TEST_ENV_\(UInt32.random(in: 0...UInt32.max))"
        // "=\u{301}": an '=' followed by a combining mark is one Character, not an '='.
        let value = "a=b=\u{301}c é"
        setenv(name, value, 1)
        defer { unsetenv(name) }
        let table = ProcessEnvironment.dictionary
        #expect(table[name] == value)
        #expect(table["PATH"] == String(cString: getenv("PATH")))
    }

    @Test("a name with a combining mark after '=' is cut at the '=' byte")
    func nameEndsAtTheFirstEqualsByte() {
        let name = "ICEBOX_TEST_ENV_\(UInt32.random(in: 0...UInt32.max))"
        setenv(name, "\u{301}x", 1)
        defer { unsetenv(name) }
        #expect(ProcessEnvironment.dictionary[name] == "\u{301}x")
    }
}

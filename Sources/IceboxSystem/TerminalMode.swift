import CIceboxShim
import Glibc

/// A terminal in raw mode for a full-screen view, and its way back. The settings before and the
/// bytes that leave the view are kept by the C shim where a crash handler can reach them, so even a
/// crash gives the user their terminal back (see `icebox_terminal_raw`). One at a time in a
/// process.
package enum TerminalMode {
    /// Saves the settings of the terminal on `fd`, switches it to raw mode (keys arrive one
    /// by one, unechoed; Ctrl-C is a byte, not SIGINT), and keeps `leave` to write on the way back.
    package static func enterRaw(fd: Int32, leave: [UInt8]) throws(SystemError) {
        let rc = leave.withUnsafeBufferPointer { icebox_terminal_raw(fd, $0.baseAddress!, $0.count) }
        if rc != 0 { throw SystemError("put the terminal in raw mode (tcsetattr)") }
    }

    /// Writes the `leave` bytes and puts the saved settings back; does nothing if the
    /// terminal is not in raw mode through `enterRaw`. Async-signal-safe.
    @discardableResult
    package static func restore() -> Bool { icebox_terminal_restore() == 0 }

    /// The terminal's size (rows, columns); nil if `fd` is no terminal or says 0.
    package static func size(fd: Int32) -> (rows: Int, columns: Int)? {
        var size = winsize()
        guard ioctl(fd, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0, size.ws_row > 0 else { return nil }
        return (Int(size.ws_row), Int(size.ws_col))
    }
}

/// Which apps' registry records wait to be written, and which could not be: written once per
/// turn (Daemon `flushRegistry`), one small file per changed app, not a rewrite of all.
struct RegistryWriter {
    private(set) var dirty = Set<String>()  // to write on this turn (a failed write stays for the next)
    private var allDirty = false  // every record, live and ended
    /// Records written once this turn's replies are out (a confirmed freeze's: Daemon+Effects).
    private var afterReplies = Set<String>()
    /// Apps whose record could not be written (what failed), logged once until a write works.
    private var failures: [String: String] = [:]

    /// Marks an app's record (nil: every record) for this turn's write.
    mutating func mark(_ name: String?) {
        if let name { dirty.insert(name) } else { allDirty = true }
    }

    mutating func markAfterReplies(_ name: String) { afterReplies.insert(name) }

    /// Forgets a mark (the record is gone or replaced).
    mutating func unmark(_ name: String) { dirty.remove(name) }

    /// The records to write now, taken off the marks; `everyName` when all are dirty.
    mutating func takeDirty(everyName: () -> Set<String>) -> Set<String> {
        guard allDirty || !dirty.isEmpty else { return [] }
        let names = allDirty ? everyName() : dirty
        dirty = []
        allDirty = false
        return names
    }

    mutating func takeAfterReplies() -> Set<String> {
        defer { afterReplies = [] }
        return afterReplies
    }

    /// A record was written: true if that ends a failure (to be logged).
    mutating func written(_ name: String) -> Bool {
        dirty.remove(name)
        return failures.removeValue(forKey: name) != nil
    }

    /// A record could not be written: true if this is a new failure (to be logged once).
    mutating func failed(_ name: String, _ message: String) -> Bool {
        guard failures[name] == nil else { return false }
        failures[name] = message
        return true
    }
}

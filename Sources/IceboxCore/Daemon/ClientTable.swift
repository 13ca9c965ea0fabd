/// The daemon's control connections by descriptor, which of them have replies queued this
/// turn of the loop, and which asked for the daemon's stop: the one owner of the
/// `ClientConnection`s (Daemon+Control reads, answers and closes them). Its deadline: the
/// earliest time a finished client whose last replies were not read is closed.
struct ClientTable {
    private var byFD: [Int32: ClientConnection] = [:]
    /// Clients with replies queued in this turn of the loop, sent before it waits again.
    private var unflushed: Set<Int32> = []
    /// Clients of `icebox daemon --stop`: answered last, after the daemon's final write.
    private(set) var stopRequesters: [Int32] = []

    subscript(_ fd: Int32) -> ClientConnection? {
        get { byFD[fd] }
        // In place, as on the dictionary itself: a connection's buffers are not copied.
        _modify { yield &byFD[fd] }
    }

    /// Forgets a connection (the caller closes it); nil if it was not one. A stop requester
    /// stays one until `dropStopRequester` (Daemon+Control `clientGone`), as it always has.
    mutating func remove(_ fd: Int32) -> ClientConnection? {
        unflushed.remove(fd)
        return byFD.removeValue(forKey: fd)
    }

    var count: Int { byFD.count }
    var descriptors: Dictionary<Int32, ClientConnection>.Keys { byFD.keys }
    var connections: Dictionary<Int32, ClientConnection>.Values { byFD.values }

    /// Replies were queued for `fd`: sent at the end of the turn.
    mutating func queued(_ fd: Int32) { unflushed.insert(fd) }

    /// The clients with replies queued this turn, taken off the list.
    mutating func takeUnflushed() -> Set<Int32> {
        guard !unflushed.isEmpty else { return [] }
        defer { unflushed = [] }
        return unflushed
    }

    mutating func addStopRequester(_ fd: Int32) { stopRequesters.append(fd) }

    /// `fd` no longer waits for the stop (it went away).
    mutating func dropStopRequester(_ fd: Int32) { stopRequesters.removeAll { $0 == fd } }

    /// Finished clients whose last replies were not read by `now`.
    func overdue(now: UInt64) -> [Int32] {
        byFD.compactMap { fd, client in (client.closeAt ?? .max) <= now ? fd : nil }
    }

    /// No client but those waiting for the daemon's stop.
    var onlyStopRequesters: Bool { byFD.keys.allSatisfy(stopRequesters.contains) }

    /// When the next connection is closed for the loop (LoopTimer `clients`).
    var nextDeadline: UInt64? { byFD.values.lazy.compactMap(\.closeAt).min() }
}

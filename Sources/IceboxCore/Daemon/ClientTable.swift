/// The daemon's control connections by descriptor, which have replies queued this turn, and
/// which asked for the daemon's stop. Its deadline: when an unread finished client is closed.
struct ClientTable {
    private var byFD: [Int32: ClientConnection] = [:]
    private var unflushed: Set<Int32> = []  // replies queued this turn, sent before the loop waits
    /// Clients of `icebox daemon --stop`: answered last, after the daemon's final write.
    private(set) var stopRequesters: [Int32] = []

    subscript(_ fd: Int32) -> ClientConnection? {
        get { byFD[fd] }
        // In place, as on the dictionary itself: a connection's buffers are not copied.
        _modify { yield &byFD[fd] }
    }

    /// Forgets a connection (the caller closes it); a stop requester stays one.
    mutating func remove(_ fd: Int32) -> ClientConnection? {
        unflushed.remove(fd)
        return byFD.removeValue(forKey: fd)
    }

    var count: Int { byFD.count }
    var descriptors: Dictionary<Int32, ClientConnection>.Keys { byFD.keys }
    var connections: Dictionary<Int32, ClientConnection>.Values { byFD.values }

    mutating func queued(_ fd: Int32) { unflushed.insert(fd) }

    mutating func takeUnflushed() -> Set<Int32> {
        guard !unflushed.isEmpty else { return [] }
        defer { unflushed = [] }
        return unflushed
    }

    mutating func addStopRequester(_ fd: Int32) { stopRequesters.append(fd) }

    mutating func dropStopRequester(_ fd: Int32) { stopRequesters.removeAll { $0 == fd } }

    /// Finished clients whose last replies were not read by `now`.
    func overdue(now: UInt64) -> [Int32] {
        byFD.compactMap { fd, client in (client.closeAt ?? .max) <= now ? fd : nil }
    }

    var onlyStopRequesters: Bool { byFD.keys.allSatisfy(stopRequesters.contains) }
    var nextDeadline: UInt64? { byFD.values.lazy.compactMap(\.closeAt).min() }
}

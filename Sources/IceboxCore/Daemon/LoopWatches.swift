import IceboxSystem

/// What the daemon's epoll set watches: each descriptor under a token of its own, and the
/// token's source (what to do when it is ready); the descriptors stay their owners'.
struct LoopWatches {
    let epoll: Epoll
    private var sources: [UInt64: Daemon.Source] = [:]
    private var tokensByFD: [Int32: UInt64] = [:]
    private var nextToken: UInt64 = 1

    init() throws(SystemError) { epoll = try Epoll() }

    mutating func watch(_ fd: Int32, _ source: Daemon.Source, events: UInt32) throws(SystemError) {
        let token = nextToken
        nextToken += 1
        try epoll.add(fd, events: events, token: token)
        sources[token] = source
        tokensByFD[fd] = token
    }

    mutating func unwatch(_ fd: Int32) {
        epoll.remove(fd)
        forget(fd)
    }

    /// Forgets the watch of a descriptor the caller closes next, without EPOLL_CTL_DEL: the
    /// close removes it. Should a copy outlive it, its events' token has no source: skipped.
    mutating func forget(_ fd: Int32) {
        if let token = tokensByFD.removeValue(forKey: fd) { sources.removeValue(forKey: token) }
    }

    /// What a ready token is about; nil for a descriptor forgotten meanwhile.
    func source(_ token: UInt64) -> Daemon.Source? { sources[token] }
    func token(of fd: Int32) -> UInt64? { tokensByFD[fd] }
}

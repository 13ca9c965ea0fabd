import IceboxSystem

/// Whether this process is in the host's user namespace (/proc/self/uid_map). Root in another
/// (`unshare -U -r`, a rootless container) has every capability there, but writes host cgroups only
/// where delegated to the uid it maps to: "run as root" is no advice to it.
package struct UserNamespace: Equatable, Sendable {
    /// The uid_map lines, as the kernel writes them: "inside outside count".
    package var uidMap: [(inside: UInt32, outside: UInt32, count: UInt32)]

    package static func == (a: UserNamespace, b: UserNamespace) -> Bool {
        a.uidMap.elementsEqual(b.uidMap) { $0 == $1 }
    }

    /// Parses uid_map text; lines that are not three numbers are skipped.
    package init(uidMap text: String) {
        uidMap = text.split(separator: "\n").compactMap { line in
            let n = line.split(separator: " ", omittingEmptySubsequences: true).compactMap { UInt32($0) }
            return n.count == 3 ? (n[0], n[1], n[2]) : nil
        }
    }

    /// This process's; an unreadable map is taken as the host's (nothing to say).
    package static func current(path: String = "/proc/self/uid_map") -> UserNamespace {
        // Documented above: an unreadable map (a kernel without user namespaces) is the host's.
        UserNamespace(uidMap: (try? FileIO.read(path)) ?? "0 0 4294967295")
    }

    /// The initial namespace maps every uid to itself ("0 0 4294967295").
    package var isInitial: Bool { uidMap.count == 1 && uidMap[0] == (0, 0, UInt32.max) }

    /// The host uid that `uid` here is, if it is mapped.
    package func hostUID(of uid: UInt32) -> UInt32? {
        for entry in uidMap where uid >= entry.inside && uid - entry.inside < entry.count {
            return entry.outside + (uid - entry.inside)
        }
        return nil
    }

    /// The map as one line for a message: "0 1000 1".
    package var mapText: String { uidMap.map { "\($0.inside) \($0.outside) \($0.count)" }.joined(separator: ", ") }

    /// What root in this namespace is, for a message: nil in the host's namespace.
    package var rootDescription: String? {
        guard !isInitial else { return nil }
        let host = hostUID(of: 0).map { "host uid \($0)" } ?? "no host uid"
        return "root inside a user namespace (uid_map \(mapText): \(host)), not the host's root"
    }
}

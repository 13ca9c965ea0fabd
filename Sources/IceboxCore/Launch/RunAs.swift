import Glibc
import IceboxSystem

/// Who an app runs as: a uid, a gid and supplementary groups, with the names where they are known.
/// Asked for with `--user USER[:GROUP]` (the app then has no capability at all and no_new_privs);
/// every app's record says who it runs as, `--user` or not.
public struct RunAs: Codable, Sendable, Equatable, CustomStringConvertible {
    /// The user id.
    public var uid: UInt32
    /// The primary group id.
    public var gid: UInt32
    /// The supplementary groups (the primary gid among them when the user database says so).
    public var groups: [UInt32]
    /// The user's name, where the user database has one.
    public var user: String?
    /// The group's name, where the group database has one.
    public var group: String?

    /// Ids (and their names, if known) an app runs as.
    public init(uid: UInt32, gid: UInt32, groups: [UInt32] = [], user: String? = nil, group: String? = nil) {
        self.uid = uid
        self.gid = gid
        self.groups = groups
        self.user = user
        self.group = group
    }

    /// "nobody:nogroup", or the numbers where no name is known: "65534:65534".
    public var short: String { (user ?? String(uid)) + ":" + (group ?? String(gid)) }

    /// "uid 65534 (nobody), gid 65534 (nogroup), groups 65534".
    public var description: String {
        let u = "uid \(uid)" + (user.map { " (\($0))" } ?? "")
        let g = "gid \(gid)" + (group.map { " (\($0))" } ?? "")
        return u + ", " + g + ", "
            + (groups.isEmpty ? "no supplementary groups" : "groups " + groups.map(String.init).joined(separator: ","))
    }

    /// What the spawn needs.
    package var identity: SpawnIdentity { SpawnIdentity(uid: uid, gid: gid, groups: groups) }

    /// The ids this process has (the user a daemon's apps run as without --user), with the names
    /// the user database gives for them.
    package static var current: RunAs {
        let count = getgroups(0, nil)
        var list = [gid_t](repeating: 0, count: Int(max(count, 0)))
        let n = count > 0 ? getgroups(count, &list) : 0
        let uid = geteuid(), gid = getegid()
        return RunAs(
            uid: uid, gid: gid, groups: Array(list.prefix(Int(max(n, 0)))), user: UserAccounts.user(id: uid)?.name,
            group: UserAccounts.groupName(id: gid))
    }

    /// Resolves `--user USER[:GROUP]`, each a name or a number. Two numbers are taken as they are,
    /// with no lookup and no supplementary groups (so they work without a user database); else the
    /// user found gets its primary group (unless GROUP says another) and the groups that list it.
    package static func resolve(_ text: String) throws(IceboxError) -> RunAs {
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        let userText = parts[0]
        let groupText = parts.count > 1 ? parts[1] : nil
        let hint = "give USER[:GROUP] as names or numbers, e.g. nobody, 65534:65534 or www-data:www-data"
        if userText.isEmpty || groupText?.isEmpty == true {
            throw IceboxError(.usage, "invalid --user '\(text)': \(userText.isEmpty ? "no user" : "no group after ':'")", hint: hint)
        }
        var groupID: gid_t?
        var groupName: String?
        if let groupText {
            if let n = id(groupText) {
                groupID = n
            } else if let found = UserAccounts.group(named: groupText) {
                (groupID, groupName) = (found, groupText)
            } else {
                throw IceboxError(.usage, "--user \(text): no group named '\(groupText)'", hint: "check /etc/group, or give a gid")
            }
        }
        let found: UserAccounts.User
        if let uid = id(userText) {
            // UID:GID: nothing to look up.
            if let groupID { return RunAs(uid: uid, gid: groupID, groups: [], user: nil, group: groupName) }
            guard let entry = UserAccounts.user(id: uid) else {
                throw IceboxError(
                    .usage, "--user \(text): uid \(uid) has no entry in the user database, so its group is unknown",
                    hint: "give the group too, as \(uid):GID")
            }
            found = entry
        } else {
            guard let entry = UserAccounts.user(named: userText) else {
                throw IceboxError(.usage, "--user \(text): no user named '\(userText)'", hint: "check /etc/passwd, or give UID:GID")
            }
            found = entry
        }
        let gid = groupID ?? found.gid
        return RunAs(
            uid: found.uid, gid: gid, groups: UserAccounts.groups(of: found.name, gid: gid), user: found.name,
            group: groupName ?? UserAccounts.groupName(id: gid))
    }

    /// A decimal id; the value -1 (4294967295) means "unchanged" to the kernel and is refused.
    static func id(_ text: String) -> UInt32? {
        guard text.allSatisfy(\.isASCII), text.allSatisfy(\.isNumber), let n = UInt32(text), n != UInt32.max else { return nil }
        return n
    }
}

extension RunAs: JSONRecord {
    /// Decodes the ids (required) and the names (optional) under their Swift names.
    public init(from decoder: any Decoder) throws { try self.init(fieldsFrom: decoder) }

    /// Encodes the ids and the names under their Swift names (as a synthesized conformance would).
    public func encode(to encoder: any Encoder) throws { try encodeFields(to: encoder) }

    package func visitFields<V: JSONFieldVisitor>(_ v: inout V) where V.Root == RunAs {
        v.required("gid", gid) { $0.gid = $1 }
        v.optional("group", group) { $0.group = $1 }
        v.required("groups", groups) { $0.groups = $1 }
        v.required("uid", uid) { $0.uid = $1 }
        v.optional("user", user) { $0.user = $1 }
    }

    package static let jsonBlank = RunAs(uid: 0, gid: 0)
}

import CIceboxShim
import Glibc

/// The user and group database (passwd, group through NSS): every name lookup icebox makes is here,
/// so that a static build, where NSS may find nothing, has one place to look at. Numeric ids never
/// come here.
///
/// A static build (the release binary) looks in the files database only, built into libc
/// (`icebox_static_nss_files_only`: loading the NSS modules nsswitch.conf names crashed it), and
/// asks getent(1) for what the files do not have (`Getent`): the same answers as NSS, one process
/// more for a user or group from elsewhere.
package enum UserAccounts {
    /// Whether this is a static executable, which asks getent for what the files lack. Its first
    /// use sets a static build up (files only): `lookUp` and `groupList`, through which every
    /// lookup goes, use it before they call NSS.
    static let isStatic: Bool = icebox_static_nss_files_only() != 0

    package struct User: Sendable, Equatable {
        package var name: String
        package var uid: uid_t
        package var gid: gid_t
    }

    /// getpwnam_r(3).
    package static func user(named name: String) -> User? {
        let found = lookUp(passwd(), { getpwnam_r(name, $0, $1, $2, $3) }, { User($0) })
        return found ?? (isStatic ? Getent.entry("passwd", name).flatMap(User.init(entry:)) : nil)
    }

    /// getpwuid_r(3).
    package static func user(id: uid_t) -> User? {
        let found = lookUp(passwd(), { getpwuid_r(id, $0, $1, $2, $3) }, { User($0) })
        return found ?? (isStatic ? Getent.entry("passwd", String(id)).flatMap(User.init(entry:)) : nil)
    }

    /// getgrnam_r(3): the group's id.
    package static func group(named name: String) -> gid_t? {
        let found = lookUp(Glibc.group(), { getgrnam_r(name, $0, $1, $2, $3) }, { $0.gr_gid })
        guard found == nil, isStatic, let entry = Getent.entry("group", name), entry.count >= 3 else { return found }
        return gid_t(entry[2])
    }

    /// getgrgid_r(3): the group's name.
    package static func groupName(id: gid_t) -> String? {
        let found = lookUp(Glibc.group(), { getgrgid_r(id, $0, $1, $2, $3) }, { $0.gr_name.map { String(cString: $0) } })
        guard found == nil, isStatic, let entry = Getent.entry("group", String(id)), !(entry.first ?? "").isEmpty else {
            return found
        }
        return String(entry[0])
    }

    /// getgrouplist(3): the groups `user` belongs to, `gid` first. A static build adds those
    /// `getent initgroups` knows from other sources.
    package static func groups(of user: String, gid: gid_t) -> [gid_t] {
        let files = groupList(of: user, gid: gid)
        guard isStatic, let more = Getent.initgroups(user) else { return files }
        return files + more.filter { !files.contains($0) }
    }

    private static func groupList(of user: String, gid: gid_t) -> [gid_t] {
        _ = isStatic  // a static build is set up before its first lookup
        var count: Int32 = 32
        while count <= 65536 {
            var list = [gid_t](repeating: 0, count: Int(count))
            let room = count
            if getgrouplist(user, gid, &list, &count) >= 0 {
                return [gid] + list.prefix(Int(count)).filter { $0 != gid }
            }
            // -1: the list was too small, and count now says how many there are.
            count = max(count, room * 2)
        }
        return [gid]
    }

    /// Runs a *_r lookup (`call` gets the entry, the buffer, its size and the result pointer) with
    /// a buffer that grows while the call says ERANGE, and converts what it found while the buffer
    /// lives.
    private static func lookUp<Entry, T>(
        _ empty: Entry,
        _ call: (UnsafeMutablePointer<Entry>, UnsafeMutablePointer<CChar>, Int, UnsafeMutablePointer<UnsafeMutablePointer<Entry>?>) ->
            Int32,
        _ convert: (Entry) -> T?
    ) -> T? {
        _ = isStatic  // a static build is set up before its first lookup
        var size = 1024
        while size <= 1 << 20 {
            var buffer = [CChar](repeating: 0, count: size)
            let (rc, value) = buffer.withUnsafeMutableBufferPointer { buf -> (Int32, T?) in
                var entry = empty
                var result: UnsafeMutablePointer<Entry>?
                let rc = call(&entry, buf.baseAddress!, buf.count, &result)
                return (rc, result == nil ? nil : convert(entry))
            }
            if rc != ERANGE { return rc == 0 ? value : nil }
            size *= 2
        }
        return nil
    }
}

extension UserAccounts.User {
    init?(_ pwd: passwd) {
        guard let name = pwd.pw_name else { return nil }
        self.init(name: String(cString: name), uid: pwd.pw_uid, gid: pwd.pw_gid)
    }

    /// name:password:uid:gid:gecos:home:shell, as getent prints it.
    init?(entry: [Substring]) {
        guard entry.count >= 4, !entry[0].isEmpty, let uid = uid_t(entry[2]), let gid = gid_t(entry[3]) else { return nil }
        self.init(name: String(entry[0]), uid: uid, gid: gid)
    }
}

import Glibc

/// The user and group database (passwd, group through NSS): every name lookup icebox makes
/// is here, so that a static build, where NSS may find nothing, has one place to look at.
/// Numeric ids never come here.
public enum UserAccounts {
    public struct User: Sendable, Equatable {
        public var name: String
        public var uid: uid_t
        public var gid: gid_t
    }

    /// getpwnam_r(3).
    public static func user(named name: String) -> User? {
        withBuffer { buf in
            var pwd = passwd()
            var result: UnsafeMutablePointer<passwd>?
            let rc = getpwnam_r(name, &pwd, buf.baseAddress!, buf.count, &result)
            return (rc, result == nil ? nil : User(pwd))
        }
    }

    /// getpwuid_r(3).
    public static func user(id: uid_t) -> User? {
        withBuffer { buf in
            var pwd = passwd()
            var result: UnsafeMutablePointer<passwd>?
            let rc = getpwuid_r(id, &pwd, buf.baseAddress!, buf.count, &result)
            return (rc, result == nil ? nil : User(pwd))
        }
    }

    /// getgrnam_r(3): the group's id.
    public static func group(named name: String) -> gid_t? {
        withBuffer { buf in
            var grp = Glibc.group()
            var result: UnsafeMutablePointer<Glibc.group>?
            let rc = getgrnam_r(name, &grp, buf.baseAddress!, buf.count, &result)
            return (rc, result == nil ? nil : grp.gr_gid)
        }
    }

    /// getgrgid_r(3): the group's name.
    public static func groupName(id: gid_t) -> String? {
        withBuffer { buf in
            var grp = Glibc.group()
            var result: UnsafeMutablePointer<Glibc.group>?
            let rc = getgrgid_r(id, &grp, buf.baseAddress!, buf.count, &result)
            return (rc, result == nil ? nil : grp.gr_name.map { String(cString: $0) })
        }
    }

    /// getgrouplist(3): the groups `user` belongs to, `gid` first.
    public static func groups(of user: String, gid: gid_t) -> [gid_t] {
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

    /// Runs a *_r lookup (which converts what it found while the buffer lives) with a
    /// buffer that grows while the call says ERANGE.
    private static func withBuffer<T>(_ call: (UnsafeMutableBufferPointer<CChar>) -> (Int32, T?)) -> T? {
        var size = 1024
        while size <= 1 << 20 {
            var buffer = [CChar](repeating: 0, count: size)
            let (rc, value) = buffer.withUnsafeMutableBufferPointer { call($0) }
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
}

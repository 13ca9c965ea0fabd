import Foundation
import Glibc
import Testing

@testable import IceboxCore

/// The private notify directory of an app run as another user: named before it is made
/// (so a launch's record can name it), made exclusively, and removed only while it is still
/// one icebox made.
@Suite(.enabled(if: geteuid() == 0, "makes directories in /tmp owned by another user"))
struct AppNotifySocketTests {
    @Test("a private path is /tmp/icebox-notify-<16 random letters and digits>/notify, new each time, nothing made yet")
    func privatePath() {
        let paths = (0..<50).map { _ in AppNotifySocket.privatePath() }
        #expect(Set(paths).count == paths.count)
        for path in paths {
            let tag = path.dropFirst("/tmp/icebox-notify-".count).dropLast("/notify".count)
            #expect(path.hasPrefix("/tmp/icebox-notify-") && path.hasSuffix("/notify") && tag.count == 16, "\(path)")
            #expect(tag.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }, "\(path)")
            #expect(!FileManager.default.fileExists(atPath: String(path.dropLast("/notify".count))))
        }
    }

    @Test("remove leaves alone a recorded directory that is a link, someone else's, or writable by others")
    func removeRefusesForeign() throws {
        let target = FileManager.default.temporaryDirectory.path + "/icebox-notify-target-\(getpid())"
        #expect(mkdir(target, 0o755) == 0)
        #expect(FileManager.default.createFile(atPath: target + "/notify", contents: Data()))
        defer {
            unlink(target + "/notify")
            rmdir(target)
        }
        func planted(_ make: (String) -> Void) -> String {
            let path = AppNotifySocket.privatePath()
            make(String(path.dropLast("/notify".count)))
            return path
        }
        // A link to another directory: its entry "notify" must stay.
        let link = planted { symlink(target, $0) }
        // Another user's directory, and a directory anyone may write in.
        let foreign = planted {
            mkdir($0, 0o711)
            chown($0, 65534, 65534)
            _ = FileManager.default.createFile(atPath: $0 + "/notify", contents: Data())
        }
        let open = planted {
            mkdir($0, 0o777)
            chmod($0, 0o777)
            _ = FileManager.default.createFile(atPath: $0 + "/notify", contents: Data())
        }
        defer {
            for path in [link, foreign, open] {
                let dir = String(path.dropLast("/notify".count))
                unlink(path)
                unlink(dir)
                rmdir(dir)
            }
        }
        for path in [link, foreign, open] { AppNotifySocket.remove(path) }
        #expect(FileManager.default.fileExists(atPath: target + "/notify"), "removed through a link")
        #expect(FileManager.default.fileExists(atPath: foreign), "removed from another user's directory")
        #expect(FileManager.default.fileExists(atPath: open), "removed from a directory others may write")

        // One icebox made (the daemon's, 0711, or 0700 before its chmod) goes, socket and all.
        for mode: mode_t in [0o711, 0o700] {
            let ours = planted {
                mkdir($0, 0o700)
                chmod($0, mode)
                _ = FileManager.default.createFile(atPath: $0 + "/notify", contents: Data())
            }
            AppNotifySocket.remove(ours)
            #expect(!FileManager.default.fileExists(atPath: String(ours.dropLast("/notify".count))), "mode \(mode)")
        }
    }
}

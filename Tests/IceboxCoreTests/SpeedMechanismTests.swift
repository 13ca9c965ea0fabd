import IceboxCore
import Testing

/// ICEBOX_WITHOUT's reading: the names, blanks, and an unknown name refused with the known ones.
struct SpeedMechanismTests {
    @Test("names separated by commas, spaces around them; empty or blank is none")
    func names() throws {
        #expect(try SpeedMechanism.parseWithout("") == [])
        #expect(try SpeedMechanism.parseWithout(" \t") == [])
        #expect(try SpeedMechanism.parseWithout("image-lock") == [.imageLock])
        #expect(
            try SpeedMechanism.parseWithout(" thaw-priority,freezer-key-hold , image-lock,stand-ins,image-lock, freeze-aside")
                == Set(SpeedMechanism.allCases))
    }

    @Test(
        "an unknown or empty name is a usage error that names it and lists the known ones",
        arguments: ["mlock", "image-lock,", "Image-Lock", "image-lock,,stand-ins", "\u{1b}[2J"])
    func unknown(_ text: String) {
        #expect {
            try SpeedMechanism.parseWithout(text)
        } throws: { error in
            guard let error = error as? IceboxError else { return false }
            return error.code == .usage && error.message.hasPrefix("ICEBOX_WITHOUT: unknown mechanism '")
                && !error.message.contains("\u{1b}")
                && error.hint == "known: thaw-priority, freezer-key-hold, image-lock, stand-ins, freeze-aside"
        }
    }
}

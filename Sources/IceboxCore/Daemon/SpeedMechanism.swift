/// The daemon's speed mechanisms: code that changes no outcome, only how soon it comes. Each
/// must earn its place with a figure measured with and without it (`scripts/bench/budget`),
/// so each can be turned off when the daemon starts: `ICEBOX_WITHOUT=thaw-priority,image-lock`.
package enum SpeedMechanism: String, CaseIterable, Sendable {
    case thawPriority = "thaw-priority"  // a thaw's write and confirmation at SCHED_FIFO (PreemptionGuard)
    case freezerKeyHold = "freezer-key-hold"  // an empty v1 freezer cgroup held frozen (FreezerKeyHold)
    case imageLock = "image-lock"  // the program image locked in memory (ProgramImage.lockInMemory)
    case standIns = "stand-ins"  // spawn stand-ins parked in v1 cgroups (SpawnPool)
    case freezeAside = "freeze-aside"  // off the app's CPU while a freeze waits (CPUStepAside)

    /// The environment variable that names the mechanisms to leave out.
    package static let environmentVariable = "ICEBOX_WITHOUT"

    /// The mechanisms `text` leaves out: comma-separated names; blank: none. An unknown name is
    /// an error: a misspelt benchmark run must not measure the default while saying it did not.
    package static func parseWithout(_ text: String) throws(IceboxError) -> Set<SpeedMechanism> {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        if text.allSatisfy(blank) { return [] }
        var without: Set<SpeedMechanism> = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let name = String(part.drop(while: blank).reversed().drop(while: blank).reversed())
            guard let mechanism = SpeedMechanism(rawValue: name) else {
                throw IceboxError(
                    .usage,
                    "\(environmentVariable): unknown mechanism '\(TerminalText.escaped(String(name.prefix(64))))'",
                    hint: "known: " + allCases.map(\.rawValue).joined(separator: ", "))
            }
            without.insert(mechanism)
        }
        return without
    }
}

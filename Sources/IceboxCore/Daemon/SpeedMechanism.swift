/// The daemon's speed mechanisms: code that changes no outcome, only how soon it comes. Each
/// must earn its place with a figure measured with and without it in one run
/// (`scripts/bench/budget`, benchmarks/budget.md), so each can be turned off when the daemon
/// starts: `ICEBOX_WITHOUT=thaw-priority,image-lock`. That is the benchmark's switch, and a
/// way out for a host where one misbehaves; apps behave the same with or without any of them.
package enum SpeedMechanism: String, CaseIterable, Sendable {
    /// A thaw's write and confirmation at SCHED_FIFO (PreemptionGuard).
    case thawPriority = "thaw-priority"
    /// An empty v1 freezer cgroup held frozen while an app uses the v1 freezer (FreezerKeyHold).
    case freezerKeyHold = "freezer-key-hold"
    /// The daemon's program image locked in memory (ProgramImage.lockInMemory).
    case imageLock = "image-lock"
    /// Spawn stand-ins parked in v1 cgroups for the next launch (SpawnPool).
    case standIns = "stand-ins"
    /// The daemon's thread off its CPU while a freeze waits for the app's tasks (CPUStepAside).
    case freezeAside = "freeze-aside"

    /// The environment variable that names the mechanisms to leave out.
    package static let environmentVariable = "ICEBOX_WITHOUT"

    /// The mechanisms `text` leaves out: names separated by commas, spaces around them
    /// allowed; empty or blank: none. An unknown name is an error that lists the known ones:
    /// a misspelt benchmark run must not measure the default while saying it did not.
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

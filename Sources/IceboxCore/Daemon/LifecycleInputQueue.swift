import Synchronization

/// The lifecycle inputs that carrying out effects produces (a freeze confirmed within its
/// write, a cleanup that ends an app), fed to their apps in order, once the effects of the
/// input before are all done: `apply` never nests, so what an effect sees does not depend on
/// how deep it runs. Kept by reference to the app, not by name: an app relaunched under its
/// name within one drain must not receive the old one's input.
struct LifecycleInputQueue {
    struct Entry {
        let app: LiveApp
        let input: LifecycleInput
        /// When the input happened, if known; nil: read when taken (events stamped in log order).
        let now: Instant?
        let settlingWatch: Bool  // settle the app's watch after its effects (Daemon+Effects `advance`)
    }

    /// Entries not yet taken start at `head`; the storage is kept (no allocation per input).
    private var entries: [Entry] = []
    private var head = 0
    private(set) var isDraining = false  // another `apply` then only enqueues

    /// How many times effects were performed inside other effects (LifecycleInputQueueTests).
    static let nestedPerforms = Atomic<Int>(0)
    /// How many inputs have waited in a queue (LifecycleInputQueueTests: a path that makes one did).
    static let deferredInputs = Atomic<Int>(0)
    private var performing = false

    /// Starts a drain; false if one is under way (the caller enqueues instead).
    mutating func beginDraining() -> Bool {
        guard !isDraining else { return false }
        isDraining = true
        return true
    }

    mutating func enqueue(_ entry: Entry) {
        entries.append(entry)
        Self.deferredInputs.add(1, ordering: .relaxed)
    }

    /// The oldest entry not yet taken; nil ends the drain (the storage is emptied, kept).
    mutating func take() -> Entry? {
        guard head < entries.count else {
            entries.removeAll(keepingCapacity: true)
            head = 0
            isDraining = false
            return nil
        }
        defer { head += 1 }
        return entries[head]
    }

    /// Brackets the performing of one input's effects; one inside another is counted.
    mutating func beginPerforming() {
        if performing { Self.nestedPerforms.add(1, ordering: .relaxed) }
        performing = true
    }

    mutating func endPerforming() { performing = false }
}

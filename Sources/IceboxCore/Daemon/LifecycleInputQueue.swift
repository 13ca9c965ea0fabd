import Synchronization

/// The lifecycle inputs that carrying out effects produces (a freeze the kernel confirms
/// within its write, a cleanup that ends an app, a policy victim chosen after a freeze), fed
/// to their apps in the order they came, once the effects of the input before are all done.
///
/// Why a queue rather than a call: `apply` called from inside `perform` ran the second
/// input's effects in the middle of the first's, so what an effect saw depended on how deep
/// it was; with the queue, `apply` never nests and each input's effects run whole, in turn
/// (the lines reported meanwhile are held until the queue is empty: Daemon+Control `report`).
///
/// Kept by reference to the app, not by name: an app that ends and is launched again under
/// its name (--watchdog-action restart) within one drain must not receive the old one's input.
struct LifecycleInputQueue {
    struct Entry {
        let app: LiveApp
        let input: LifecycleInput
        /// When the input happened, if its caller knows (an adoption's instant); nil: read
        /// when it is taken, so that events stay stamped in the order they are logged.
        let now: Instant?
        /// Whether the app's watch is settled after its effects (a confirmation: Daemon+Effects `advance`).
        let settlingWatch: Bool
    }

    /// Entries not yet taken start at `head`; the storage is kept (no allocation per input
    /// once it has grown to the deepest chain seen).
    private var entries: [Entry] = []
    private var head = 0
    /// Whether an `apply` is draining the queue: another `apply` then only enqueues.
    private(set) var isDraining = false

    /// How many times effects were performed inside other effects: zero unless `apply` nests
    /// again (LifecycleInputQueueTests counts it across every daemon of the test process).
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

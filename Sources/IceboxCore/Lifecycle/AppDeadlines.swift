/// When each app next needs the loop (its earliest deadline: grace, readiness, a freeze's re-check,
/// a kill, a probe, the policy's timers), kept in a min-heap so that a turn of the loop looks only
/// at the apps whose time has come. With 10,000 apps, scanning them all on every turn (and copying
/// the list) was most of the daemon's CPU during a launch.
///
/// An app says its deadline may have changed by `touch` (LiveApp's setters of every property a
/// deadline is made of do); the heap is updated before it is read. Entries are never removed from
/// the middle: one whose time no longer matches its app's schedule is stale, skipped at the top.
final class AppDeadlines {
    private struct Entry {
        var at: UInt64
        var name: String
    }

    private var heap: [Entry] = []
    /// The deadline each app has in the heap (absent: none, or taken by `takeDue`).
    private var scheduled: [String: UInt64] = [:]
    private var touched: [LiveApp] = []

    /// Starts keeping `app`'s deadline (a launch, an adoption).
    func add(_ app: LiveApp) {
        app.deadlines = self
        touch(app)
    }

    /// Stops: the app has ended.
    func remove(_ app: LiveApp) {
        if app.deadlines === self { app.deadlines = nil }
        scheduled.removeValue(forKey: app.name)
    }

    /// `app`'s deadline may have changed: it is looked at again before the next read.
    func touch(_ app: LiveApp) {
        guard !app.deadlineTouched else { return }
        app.deadlineTouched = true
        touched.append(app)
    }

    /// The earliest deadline of any app, nil when none has one.
    var earliest: UInt64? {
        refresh()
        while let top = heap.first, scheduled[top.name] != top.at { pop() }
        return heap.first?.at
    }

    /// The apps whose deadline has come (`at <= now`), each once, taken off the schedule: the
    /// caller handles each and touches it again, which schedules its next deadline.
    func takeDue(now: UInt64) -> [String] {
        refresh()
        var due: [String] = []
        while let top = heap.first, top.at <= now {
            pop()
            if scheduled[top.name] == top.at {
                scheduled.removeValue(forKey: top.name)
                due.append(top.name)
            }
        }
        return due
    }

    private func refresh() {
        guard !touched.isEmpty else { return }
        for app in touched {
            app.deadlineTouched = false
            guard app.deadlines === self else { continue }  // ended since
            let at = app.nextDeadline
            guard scheduled[app.name] != at else { continue }
            scheduled[app.name] = at
            if let at { push(Entry(at: at, name: app.name)) }
        }
        touched.removeAll(keepingCapacity: true)
        // Stale entries wait for their time to reach the top; rebuilt when they dominate.
        if heap.count > 4 * scheduled.count + 64 {
            heap = []
            for (name, at) in scheduled { push(Entry(at: at, name: name)) }
        }
    }

    private func push(_ entry: Entry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].at < heap[parent].at else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private func pop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count && heap[left].at < heap[smallest].at { smallest = left }
            if right < heap.count && heap[right].at < heap[smallest].at { smallest = right }
            if smallest == parent { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}

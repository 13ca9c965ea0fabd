/// The clients waiting for apps to finish a transition, by their lifecycle id (`.settle`).
struct WaiterTable {
    private var byID: [Int: Daemon.Waiter] = [:]
    private var nextID = 1

    /// A new waiter for `client`, waiting for `apps`; its id.
    mutating func open(client: Int32, apps names: [String]) -> Int {
        let id = nextID
        nextID += 1
        byID[id] = Daemon.Waiter(client: client, remaining: Set(names))
        return id
    }

    subscript(_ id: Int) -> Daemon.Waiter? {
        get { byID[id] }
        set { byID[id] = newValue }
    }

    mutating func close(_ id: Int) { byID.removeValue(forKey: id) }

    mutating func closeAll(of client: Int32) {
        byID = byID.filter { $0.value.client != client }
    }

    /// Every waiter by id (a copy: the caller may change the table while going through it).
    var all: [Int: Daemon.Waiter] { byID }
}

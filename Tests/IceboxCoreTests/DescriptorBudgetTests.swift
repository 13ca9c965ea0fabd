import Foundation
import Glibc
import Testing

@testable import IceboxCore

/// What the daemon keeps open per app, and what it lets go of when descriptors run short.
struct DescriptorBudgetTests {
    @Test func plentyWhileEveryAppKeepingEightLeavesHalfTheLimitFree() {
        let budget = DescriptorBudget(limit: 20_000)
        // 64 reserved + 8 per app + clients < 10,000
        #expect(budget.isPlenty(apps: 1_000, clients: 0))
        #expect(!budget.isPlenty(apps: 1_242, clients: 0), "8 × 1242 + 64 = 10,000 is not below half")
        #expect(budget.isPlenty(apps: 1_241, clients: 7))
        #expect(!budget.isPlenty(apps: 1_241, clients: 8), "8 × 1241 + 8 + 64 = 10,000 is not below half")
        #expect(!budget.isPlenty(apps: 10_000, clients: 0))
    }

    @Test func aSmallLimitIsNeverPlentyAndNothingOverflows() {
        #expect(!DescriptorBudget(limit: 128).isPlenty(apps: 0, clients: 0), "64 reserved of 64")
        #expect(DescriptorBudget(limit: 1024).isPlenty(apps: 0, clients: 0))
        #expect(!DescriptorBudget(limit: .max).isPlenty(apps: .max, clients: .max))
        #expect(DescriptorBudget(limit: .max).isPlenty(apps: 1_000_000, clients: 1_000))
    }

    @Test func droppedNotifyMessagesAreLoggedAtMostOnceAnInterval() {
        var drops = NotifyDrops()
        #expect(drops.dueAt == nil)
        let due = drops.drop(from: 10, now: 1_000)
        #expect(due, "the first drop is logged at once")
        let first = drops.take(now: 1_000)
        #expect(first?.count == 1 && first?.sender == 10)
        let none = drops.take(now: 1_000)
        #expect(none == nil, "nothing left to log")
        let second = drops.drop(from: 11, now: 2_000), third = drops.drop(from: 12, now: 3_000)
        #expect(!second && !third, "within the interval: held back")
        #expect(drops.dueAt == 1_000 + NotifyDrops.logIntervalNanos, "the loop logs them when the interval ends")
        let held = drops.take(now: drops.dueAt ?? 0)
        #expect(held?.count == 2 && held?.sender == 12, "the count and the last sender")
        #expect(NotifyDrops.describe(1, sender: 7) == "a message from pid 7")
        #expect(NotifyDrops.describe(3, sender: 7).hasPrefix("3 messages"))
        var late = NotifyDrops()
        _ = late.drop(from: 1, now: .max)
        _ = late.take(now: .max)
        #expect(late.dueAt == nil)
        let afterMax = late.drop(from: 1, now: .max - 1)
        #expect(!afterMax, "saturates instead of trapping")
    }

    @Test func aReleasedCgroupFileOpensAgainAtItsNextUseAndAClosedOneStaysClosed() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("icebox-release-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/memory.current"
        try "4096\n".write(toFile: path, atomically: false, encoding: .utf8)
        // Descriptors on this file (other tests in this process open and close their own).
        func open() -> Int {
            ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).filter {
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) == path
            }.count
        }
        let file = CgroupFile(path: path, writable: false)
        let before = open()
        #expect(before == 0)
        #expect(file.readCounter(opening: true) == 4096)
        #expect(open() == before + 1, "kept open")
        file.release()
        #expect(open() == before, "released")
        #expect(file.readCounter(opening: false) == nil, "not opened by a read that may not open")
        #expect(file.readCounter(opening: true) == 4096)
        #expect(open() == before + 1, "open again")
        file.close()
        file.release()
        #expect(file.watchDescriptor == nil, "a closed file stays closed")
        #expect(try file.read() == "4096\n", "and reads by path")
        #expect(open() == before)
    }
}

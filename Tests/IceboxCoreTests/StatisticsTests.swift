import IceboxCore
import Testing

@Suite("Summary statistics")
struct StatisticsTests {
    @Test("mean, sample standard deviation, median, min, max and p95")
    func basicFigures() throws {
        let s = try #require(Summary(samples: [2, 4, 4, 4, 5, 5, 7, 9]))
        #expect(s.mean == 5)
        #expect(s.stddev == 2)  // sample σ of this classic set is 2.138
        #expect(s.median == 5)  // between 4 and 5, rounded
        #expect(s.min == 2 && s.max == 9)
        #expect(s.p95 == 8)  // 7 + 0.65 × (9 − 7) = 8.3
        #expect(s.outliers == 0)
    }

    @Test("large nanosecond values are averaged, not reinterpreted")
    func largeValues() throws {
        let s = try #require(Summary(samples: [168_757_028, 155_638_372, 157_601_957]))
        #expect(s.mean == 160_665_786)
        #expect(s.median == 157_601_957)
    }

    @Test("one far sample is an outlier; a single sample has no spread")
    func outliers() throws {
        let s = try #require(Summary(samples: [100, 101, 99, 100, 102, 98, 100, 5000]))
        #expect(s.outliers == 1)
        let one = try #require(Summary(samples: [42]))
        #expect(one.stddev == 0 && one.median == 42 && one.p95 == 42)
        #expect(Summary(samples: []) == nil)
    }
}

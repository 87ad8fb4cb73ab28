import Testing
import Threads

/// `LoopIteration` runs what a round deferred at the round's end, in order, once each, and what
/// that work defers in turn before `end` returns.
@Suite struct LoopIterationTests {
    @Test func deferredWorkRunsOnceInOrderIncludingWhatItDefers() {
        let rounds = LoopIteration()
        rounds.enter()
        defer { rounds.leave() }
        var ran: [String] = []
        for round in 1...3 {
            #expect(LoopIteration.atEnd { ran.append("\(round)a") })
            #expect(
                LoopIteration.atEnd {
                    ran.append("\(round)b")
                    // Deferred while the round ends: it still runs before `end` returns.
                    LoopIteration.atEnd { ran.append("\(round)c") }
                })
            #expect(ran.isEmpty || ran.last == "\(round - 1)c", "nothing runs before the round ends")
            rounds.end()
            #expect(ran.suffix(3) == ["\(round)a", "\(round)b", "\(round)c"])
            rounds.end()  // an empty round runs nothing again
        }
        #expect(ran.count == 9)
    }
}

import Testing
import Threads

@Suite struct JobChainTests {
    @Test func aRequestWhileAJobIsOutRunsTheChainOnceMoreNotTwice() {
        let chain = JobChain()
        #expect(chain.request())  // nothing out: start
        #expect(!chain.request())  // one is out: remembered, not a second chain
        #expect(!chain.request())
        #expect(chain.finished(didWork: false))  // found nothing, but was asked again: once more
        #expect(!chain.finished(didWork: false))  // nothing found, nobody asked: the chain stops
        #expect(chain.request())  // and the next request starts it again
    }

    @Test func aJobThatWorkedIsFollowedByAnotherUntilOneFindsNothing() {
        let chain = JobChain()
        #expect(chain.request())
        #expect(chain.finished(didWork: true))
        #expect(chain.finished(didWork: true))
        #expect(!chain.finished(didWork: false))
    }

    @Test func aFailureEndsTheChainAndForgetsPendingRequests() {
        let chain = JobChain()
        #expect(chain.request())
        #expect(!chain.request())
        chain.failed()
        #expect(chain.request())
    }
}

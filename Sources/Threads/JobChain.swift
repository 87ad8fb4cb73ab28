/// Keeps at most one chain of background jobs going: a request while a job is out is
/// remembered, so the chain runs once more instead of starting a second one beside it.
///
/// The stores' retired-subscriber purges use it: each job deletes one chunk, and the chain
/// stops once a job finds nothing and nobody asked again meanwhile.
package final class JobChain: Sendable {
    private struct State {
        /// A job is queued or running.
        var running = false
        /// A request arrived while a job was out: look again even if that job found nothing.
        var again = false
    }

    private let state = PThreadLock(State())

    package init() {}

    /// Whether the caller must start the chain now (false: one is out and will look again).
    package func request() -> Bool {
        state.withLock { state in
            if state.running {
                state.again = true
                return false
            }
            state.running = true
            return true
        }
    }

    /// Whether the caller must submit the next job, after one that did (or did not) work.
    package func finished(didWork: Bool) -> Bool {
        state.withLock { state in
            guard didWork || state.again else {
                state.running = false
                return false
            }
            state.again = false
            return true
        }
    }

    /// Ends the chain after a job failed; the next request starts it again.
    package func failed() {
        state.withLock { $0.running = false }
    }
}

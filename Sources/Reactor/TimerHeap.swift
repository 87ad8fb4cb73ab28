/// Identifies a scheduled timer so it can be cancelled.
package struct TimerID: Hashable, Sendable {
    let value: UInt64
}

/// A binary min-heap of deadlines. Cancelled timers stay in the heap and are skipped when
/// popped (their callbacks are gone), which keeps cancel O(1).
struct TimerHeap {
    private struct Entry {
        var deadline: UInt64
        var id: UInt64
    }
    private var heap: [Entry] = []
    private var callbacks: [UInt64: () -> Void] = [:]
    private var nextID: UInt64 = 0

    var isEmpty: Bool { callbacks.isEmpty }

    mutating func schedule(at deadline: UInt64, _ body: @escaping () -> Void) -> TimerID {
        nextID &+= 1
        callbacks[nextID] = body
        heap.append(Entry(deadline: deadline, id: nextID))
        siftUp(heap.count - 1)
        return TimerID(value: nextID)
    }

    mutating func cancel(_ id: TimerID) {
        callbacks[id.value] = nil
    }

    /// The earliest live deadline, dropping cancelled entries from the top.
    mutating func nextDeadline() -> UInt64? {
        while let top = heap.first {
            if callbacks[top.id] != nil { return top.deadline }
            popTop()
        }
        return nil
    }

    /// Removes and returns the callbacks due at `now`, earliest first.
    mutating func popDue(now: UInt64) -> [() -> Void] {
        var due: [() -> Void] = []
        while let top = heap.first, top.deadline <= now {
            popTop()
            if let body = callbacks.removeValue(forKey: top.id) { due.append(body) }
        }
        return due
    }

    private mutating func popTop() {
        let last = heap.removeLast()
        if heap.isEmpty { return }
        heap[0] = last
        siftDown(0)
    }

    private mutating func siftUp(_ index: Int) {
        var child = index
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ index: Int) {
        var parent = index
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count, heap[right].deadline < heap[smallest].deadline { smallest = right }
            if smallest == parent { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}

import CLinux
import Glibc

/// Which readiness a registration waits for. The one place EPOLL masks are built from the
/// C enum values (they import as `EPOLL_EVENTS`, not integers).
package struct Interest: OptionSet, Hashable, Sendable {
    package var rawValue: UInt8
    @inlinable package init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Wake when readable (or the peer half-closed).
    @inlinable package static var read: Interest { Interest(rawValue: 1) }
    /// Wake when the socket accepts writes again.
    @inlinable package static var write: Interest { Interest(rawValue: 2) }

    // The set operations a connection uses on every request, written on the bits. Without
    // them another module reaches `OptionSet`'s defaults unspecialised, through the
    // conformance's witness table (~200 instructions a request, callgrind).
    @inlinable package init() { rawValue = 0 }
    @inlinable package func contains(_ member: Interest) -> Bool { rawValue & member.rawValue == member.rawValue }
    @inlinable package func union(_ other: Interest) -> Interest { Interest(rawValue: rawValue | other.rawValue) }
    @inlinable package func subtracting(_ other: Interest) -> Interest {
        Interest(rawValue: rawValue & ~other.rawValue)
    }
    @inlinable @discardableResult
    package mutating func insert(_ member: Interest) -> (inserted: Bool, memberAfterInsert: Interest) {
        let inserted = !contains(member)
        rawValue |= member.rawValue
        return (inserted, member)
    }
    @inlinable package static func == (lhs: Interest, rhs: Interest) -> Bool { lhs.rawValue == rhs.rawValue }
    @inlinable package static func != (lhs: Interest, rhs: Interest) -> Bool { lhs.rawValue != rhs.rawValue }

    /// The epoll mask. Level-triggered: a handler that stops reading must drop `.read`.
    var epollMask: UInt32 {
        var mask: UInt32 = 0
        if contains(.read) { mask |= EPOLLIN.rawValue | EPOLLRDHUP.rawValue }
        if contains(.write) { mask |= EPOLLOUT.rawValue }
        return mask
    }
}

/// Readiness reported by epoll, decoded from its mask.
struct Readiness {
    var readable: Bool
    var writable: Bool
    /// The peer reset or both directions are shut: delivered even without read interest.
    var hangup: Bool

    init(mask: UInt32) {
        hangup = mask & (EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0
        // Errors and hang-ups are delivered as readable: the next read reports them.
        let readMask = EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue
        readable = mask & readMask != 0
        writable = mask & (EPOLLOUT.rawValue | EPOLLERR.rawValue) != 0
    }
}

/// Raw epoll and eventfd calls, each through `syscall`.
enum Epoll {
    static func create() throws -> Int32 {
        try blockingSyscall("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
    }

    static func ctl(_ epfd: Int32, _ op: Int32, fd: Int32, mask: UInt32, data: UInt64) throws {
        var event = epoll_event()
        event.events = mask
        event.data.u64 = data
        try blockingSyscall("epoll_ctl") { epoll_ctl(epfd, op, fd, &event) }
    }

    static func wait(
        _ epfd: Int32, _ events: UnsafeMutablePointer<epoll_event>, capacity: Int32, timeoutMs: Int32
    ) throws -> Int {
        switch try syscall("epoll_wait", { epoll_wait(epfd, events, capacity, timeoutMs) }) {
        case .processed(let count): return Int(count)
        case .wouldBlock: return 0
        }
    }
}

enum EventFD {
    static func create() throws -> Int32 {
        try blockingSyscall("eventfd") { eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) }
    }

    static func signal(_ fd: Int32) throws {
        var one: UInt64 = 1
        _ = try syscall("eventfd_write") { Glibc.write(fd, &one, 8) }
    }

    static func drain(_ fd: Int32) throws {
        var value: UInt64 = 0
        _ = try syscall("eventfd_read") { Glibc.read(fd, &value, 8) }
    }
}

import CLinux
import Glibc

/// An errno a syscall failed with, and which call it was, for logs and tests.
package struct SystemError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The `errno` value.
    package var errno: Int32
    /// The name of the failing call, e.g. `"accept4"`.
    package var call: String

    package init(errno: Int32, call: String) {
        self.errno = errno
        self.call = call
    }

    package var description: String {
        "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }
}

/// The outcome of a non-blocking call: a value, or "try again when the fd is ready".
package enum IOResult<Value> {
    /// The call succeeded with this result.
    case processed(Value)
    /// `EAGAIN`: retry once epoll reports readiness.
    case wouldBlock
}

/// Runs one raw syscall with the house rules (STYLE example 6): `EINTR` is retried, `EAGAIN`
/// becomes `.wouldBlock`, `EBADF`/`EFAULT` are our own bugs and crash, anything else is thrown
/// with the errno and the call's name.
@inline(__always)
package func syscall<T: FixedWidthInteger>(
    _ name: StaticString, _ body: () -> T
) throws -> IOResult<T> {
    while true {
        let result = body()
        if result != -1 { return .processed(result) }
        let error = buzzkit_errno()
        switch error {
        case EINTR:
            continue
        case EAGAIN, EWOULDBLOCK:
            return .wouldBlock
        case EBADF, EFAULT:
            // A closed or wild descriptor means our bookkeeping is wrong; going on would
            // act on some other connection's fd.
            preconditionFailure("\(name) failed with errno \(error): a bug in fd ownership")
        default:
            throw SystemError(errno: error, call: "\(name)")
        }
    }
}

/// Like `syscall` for calls that never legitimately return `EAGAIN` (setup calls).
@inline(__always)
@discardableResult
package func blockingSyscall<T: FixedWidthInteger>(_ name: StaticString, _ body: () -> T) throws -> T {
    switch try syscall(name, body) {
    case .processed(let value): return value
    case .wouldBlock: throw SystemError(errno: EAGAIN, call: "\(name)")
    }
}

/// Online processor count (at least 1), the default number of event loops.
package func processorCount() -> Int {
    max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
}

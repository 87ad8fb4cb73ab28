import CPostgreSQL
import Glibc

/// One `NOTIFY` received on a connection that ran `LISTEN`.
package struct PostgresNotification: Sendable, Hashable {
    /// The channel name.
    package var channel: String
    /// The payload (empty when none was given).
    package var payload: String
    /// The server process that sent it: equal to the receiver's ``Connection/backendPID`` when
    /// it came from this very connection.
    package var senderPID: Int32
}

extension Connection {
    /// Waits up to `timeout` for notifications and returns every one that arrived (possibly none).
    ///
    /// Follows libpq's recipe (<https://www.postgresql.org/docs/15/libpq-notify.html>): wait for
    /// the socket to be readable, `PQconsumeInput`, then drain `PQnotifies`.
    /// - Throws: ``PostgresError`` (class `08`) when the connection is lost: the caller should
    ///   reconnect, `LISTEN` again and assume it missed notifications.
    package func notifications(timeout: Duration) throws -> [PostgresNotification] {
        let handle = try openHandle()
        var received = try drainNotifications(handle)
        guard received.isEmpty else { return received }
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        guard descriptor.fd >= 0 else { throw PostgresError(sqlState: "08006", message: "connection has no socket") }
        let milliseconds = Int32(
            clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let ready = poll(&descriptor, 1, milliseconds)
        if ready < 0 && errno != EINTR {
            throw PostgresError(sqlState: "08006", message: "poll failed: \(String(cString: strerror(errno)))")
        }
        if ready > 0 { received = try drainNotifications(handle) }
        return received
    }

    private func drainNotifications(_ handle: OpaquePointer) throws -> [PostgresNotification] {
        guard PQconsumeInput(handle) == 1 else {
            throw PostgresError(result: nil, connection: handle, sql: nil).withState("08006")
        }
        var received: [PostgresNotification] = []
        while let notify = PQnotifies(handle) {
            received.append(
                PostgresNotification(
                    channel: String(cString: notify.pointee.relname),
                    payload: notify.pointee.extra.map { String(cString: $0) } ?? "",
                    senderPID: notify.pointee.be_pid))
            PQfreemem(notify)
        }
        return received
    }
}

extension PostgresError {
    /// The same error with another SQLSTATE.
    func withState(_ state: String) -> PostgresError {
        var copy = self
        copy.sqlState = state
        return copy
    }
}

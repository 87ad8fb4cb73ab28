import HTTP1

/// A whole request as the application sees it: head plus the decoded body
/// (de-chunked and, when `Content-Encoding: gzip` was sent, decompressed).
///
/// An immutable object: it travels from the connection's state machine through the
/// application's request context and its answer, and a reference is one retain per copy where
/// the struct (method, target, fields, body) was four.
package final class HTTPRequest: Sendable, Equatable {
    package let head: HTTPRequestHead
    package let body: [UInt8]

    package init(head: HTTPRequestHead, body: [UInt8]) {
        self.head = head
        self.body = body
    }

    package static func == (lhs: HTTPRequest, rhs: HTTPRequest) -> Bool {
        lhs.head == rhs.head && lhs.body == rhs.body
    }

    // Inlined into the application: a call returned a copy of the field, a retain and a release.
    @inlinable package var method: HTTPMethod { head.method }
    @inlinable package var headers: HTTPHeaders { head.headers }
}

/// A whole response. The server adds `Content-Length`, `Connection` and `Date`, compresses
/// when the client asked for gzip, and drops the body for `HEAD`.
package struct HTTPResponse: Sendable {
    package var status: HTTPStatus
    package var headers: HTTPHeaders
    package var body: [UInt8]

    package init(status: HTTPStatus, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// The one seam between the server and the application. Class-bound, like the store: every
/// request calls it through the server's shared reference, and a class existential is copied
/// with one retain instead of through its value witnesses.
package protocol Responder: AnyObject, Sendable {
    /// Answers a request. `completion` may be called on any thread, exactly once; calling it
    /// before returning (reads) avoids any thread hop. It takes the response owned, so the
    /// connection keeps it without a copy (a retain and release of its headers and body).
    func respond(to request: HTTPRequest, completion: @escaping @Sendable (consuming HTTPResponse) -> Void)

    /// The answer to a request the server itself refused (malformed, over a limit, timed out),
    /// so the application can render it in its envelope.
    func respond(toProtocolError error: HTTPParseError, requestHead: HTTPRequestHead?) -> HTTPResponse
}

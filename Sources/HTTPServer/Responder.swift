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

/// Where the answer to one request goes, called exactly once, on any thread. For a request read
/// by a connection it is that connection and the request's serial, carried as they are: a
/// closure capturing them was a heap box allocated and freed every request (~240 instructions
/// and an atomic count of a `/healthz`, callgrind). Made from a closure, it calls that closure
/// (tests, in-process clients).
package enum ResponseCompletion: Sendable {
    /// The connection that read the request, and the request's serial there.
    case connection(HTTPConnection, serial: UInt64)
    case closure(@Sendable (consuming HTTPResponse) -> Void)

    /// Delivers the response. Consuming, so the connection is moved out, not retained again.
    package consuming func callAsFunction(_ response: consuming HTTPResponse) {
        switch consume self {
        case .connection(let connection, let serial): connection.complete(response, serial: serial)
        case .closure(let body): body(response)
        }
    }
}

/// The one seam between the server and the application. Class-bound, like the store: every
/// request calls it through the server's shared reference, and a class existential is copied
/// with one retain instead of through its value witnesses.
package protocol Responder: AnyObject, Sendable {
    /// Answers a request. `completion` may be called on any thread, exactly once; calling it
    /// before returning (reads) avoids any thread hop. It takes the response owned, so the
    /// connection keeps it without a copy (a retain and release of its headers and body).
    func respond(to request: HTTPRequest, completion: ResponseCompletion)

    /// The answer to a request the server itself refused (malformed, over a limit, timed out),
    /// so the application can render it in its envelope.
    func respond(toProtocolError error: HTTPParseError, requestHead: HTTPRequestHead?) -> HTTPResponse
}

extension Responder {
    /// Answers a request into a closure (tests, in-process clients).
    package func respond(to request: HTTPRequest, completion: @escaping @Sendable (consuming HTTPResponse) -> Void) {
        respond(to: request, completion: .closure(completion))
    }
}

import COpenSSLTLS
import Glibc

/// Where the client finds the certificate authorities it trusts.
package enum TrustRoots: Hashable, Sendable {
    /// The system store (`SSL_CTX_set_default_verify_paths`: `/etc/ssl/certs` on Debian, kept by `ca-certificates`).
    case system
    /// Only the CAs in this PEM file: tests, or a private PKI.
    case caFile(String)
}

/// One `SSL_CTX` for every connection of a client: the trust store is loaded once.
///
/// Sendable because OpenSSL allows one context to be shared by many threads once it is set
/// up, and nothing changes it after `init`.
final class TLSContext: @unchecked Sendable {
    let context: OpaquePointer

    init(trust: TrustRoots) throws {
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw WebhookClientError(.tlsFailed, "SSL_CTX_new: \(openSSLErrors())")
        }
        // Owned from here: freed in deinit, or right away if set-up fails below.
        self.context = context
        // Verification on: a webhook carries personal data, an unverified peer could be anyone.
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        guard buzzkit_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) == 1 else {
            throw WebhookClientError(.tlsFailed, "cannot require TLS 1.2: \(openSSLErrors())")
        }
        switch trust {
        case .system:
            guard SSL_CTX_set_default_verify_paths(context) == 1 else {
                throw WebhookClientError(.tlsFailed, "cannot load the system trust store: \(openSSLErrors())")
            }
        case .caFile(let path):
            guard SSL_CTX_load_verify_locations(context, path, nil) == 1 else {
                throw WebhookClientError(.tlsFailed, "cannot load CA file \(path): \(openSSLErrors())")
            }
        }
    }

    deinit { SSL_CTX_free(context) }
}

/// A TLS session over a connected non-blocking socket; the socket stays the caller's.
final class TLSSession {
    private let ssl: OpaquePointer

    /// Prepares a client session for `host`: SNI (not for IP literals, RFC 6066 §3) and the
    /// name (or IP) the certificate must carry (`SSL_set1_host`, RFC 6125).
    init(context: TLSContext, fd: Int32, host: String, hostIsIPLiteral: Bool) throws {
        guard let ssl = SSL_new(context.context) else {
            throw WebhookClientError(.tlsFailed, "SSL_new: \(openSSLErrors())")
        }
        self.ssl = ssl
        guard SSL_set_fd(ssl, fd) == 1 else { throw WebhookClientError(.tlsFailed, "SSL_set_fd: \(openSSLErrors())") }
        if !hostIsIPLiteral {
            guard buzzkit_SSL_set_tlsext_host_name(ssl, host) == 1 else {
                throw WebhookClientError(.tlsFailed, "cannot set SNI: \(openSSLErrors())")
            }
        }
        // OpenSSL 3 treats an IP literal given here as an IP to match against the SANs.
        guard SSL_set1_host(ssl, host) == 1 else {
            throw WebhookClientError(.tlsFailed, "cannot set the expected host: \(openSSLErrors())")
        }
    }

    deinit { SSL_free(ssl) }

    /// What a non-blocking TLS call needs before it can go on.
    enum Wait {
        case readable
        case writable
    }

    /// One step of the handshake: nil when done, otherwise what to wait for.
    func handshake() throws -> Wait? {
        ERR_clear_error()
        let result = SSL_connect(ssl)
        if result == 1 { return nil }
        return try wait(after: result, doing: "handshake")
    }

    /// Writes from `bytes`: how many were taken, or what to wait for.
    func write(_ bytes: UnsafeRawBufferPointer) throws -> Result<Int, WaitError> {
        ERR_clear_error()
        let result = SSL_write(ssl, bytes.baseAddress, Int32(bytes.count))
        if result > 0 { return .success(Int(result)) }
        return .failure(WaitError(wait: try wait(after: result, doing: "write")))
    }

    /// Reads into `buffer`: how many bytes (0 at the end of the stream), or what to wait for.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Result<Int, WaitError> {
        ERR_clear_error()
        let result = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
        if result > 0 { return .success(Int(result)) }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_ZERO_RETURN:
            return .success(0)
        case SSL_ERROR_SYSCALL where ERR_peek_error() == 0:
            // The peer closed without close_notify; for us that is the end of the answer.
            return .success(0)
        default:
            return .failure(WaitError(wait: try wait(after: result, doing: "read")))
        }
    }

    /// A wait in a `Result`, so read and write can return bytes or "not yet" in one value.
    struct WaitError: Error {
        var wait: Wait
    }

    private func wait(after result: Int32, doing step: String) throws -> Wait {
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: return .readable
        case SSL_ERROR_WANT_WRITE: return .writable
        default:
            let verification = SSL_get_verify_result(ssl)
            if verification != X509_V_OK {
                let reason = String(cString: X509_verify_cert_error_string(verification))
                throw WebhookClientError(.certificateRejected, "certificate rejected: \(reason)")
            }
            let errors = openSSLErrors()
            throw WebhookClientError(.tlsFailed, "TLS \(step) failed: \(errors.isEmpty ? "connection reset" : errors)")
        }
    }
}

@available(*, unavailable) extension TLSSession: Sendable {}

/// The thread's OpenSSL error queue as text, emptied.
private func openSSLErrors() -> String {
    var messages: [String] = []
    while case let code = ERR_get_error(), code != 0 {
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        messages.append(string(fromCBuffer: buffer))
    }
    return messages.joined(separator: "; ")
}

/// The text before the first NUL of a C string buffer.
func string(fromCBuffer buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

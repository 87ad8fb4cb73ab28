import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One HTTP request the queue sends.
struct OutgoingRequest: Sendable, Equatable {
    var method: String
    var path: String
    var headers: [String: String]
    var body: [UInt8]?
}

/// What came back: a status, the headers the queue reads, the body; or no answer at all.
enum TransportResult: Sendable, Equatable {
    case response(status: Int, retryAfter: String?, body: [UInt8])
    case failure(String)
}

/// Sends one request and waits for its answer; the delivery thread calls it, never the app's thread.
protocol Transport: Sendable {
    func send(_ request: OutgoingRequest) -> TransportResult
}

/// `URLSession` (FoundationNetworking on Linux), one request at a time from the delivery thread.
final class URLSessionTransport: Transport, @unchecked Sendable {
    private let baseURL: URL
    private let session: URLSession

    init(baseURL: URL, timeout: TimeInterval) {
        self.baseURL = baseURL
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout
        configuration.httpMaximumConnectionsPerHost = 1
        configuration.urlCache = nil
        session = URLSession(configuration: configuration)
    }

    func send(_ request: OutgoingRequest) -> TransportResult {
        guard let url = URL(string: request.path, relativeTo: baseURL) else { return .failure("bad path") }
        var urlRequest = URLRequest(url: url)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        if let body = request.body { urlRequest.httpBody = Data(body) }
        let box = ResultBox()
        let done = DispatchSemaphore(value: 0)
        let task = session.dataTask(with: urlRequest) { data, response, error in
            if let http = response as? HTTPURLResponse {
                box.value = .response(
                    status: http.statusCode, retryAfter: http.value(forHTTPHeaderField: "Retry-After"),
                    body: data.map { [UInt8]($0) } ?? [])
            } else {
                box.value = .failure(error.map { "\($0)" } ?? "no response")
            }
            done.signal()
        }
        task.resume()
        done.wait()
        return box.value
    }
}

/// Carries the completion handler's result to the waiting thread (the semaphore orders the accesses).
private final class ResultBox: @unchecked Sendable {
    var value: TransportResult = .failure("no response")
}

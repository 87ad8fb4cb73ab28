import Foundation
import TestSupport
import Testing

/// Checks an error envelope: status and stable code.
func expectError(
    _ response: HTTPClient.Response, _ status: Int, _ code: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(response.status == status, "\(response.text)", sourceLocation: sourceLocation)
    #expect(response.errorCode == code, "\(response.text)", sourceLocation: sourceLocation)
    #expect(response.json?["success"] as? Bool == false, sourceLocation: sourceLocation)
}

/// Checks a success envelope with the given status.
func expectOK(_ response: HTTPClient.Response, _ status: Int = 200, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(response.status == status, "\(response.text)", sourceLocation: sourceLocation)
    #expect(response.json?["success"] as? Bool == true, sourceLocation: sourceLocation)
}

/// The error object of an envelope without its request id, to compare two refusals exactly.
func errorShape(_ response: HTTPClient.Response) -> String {
    let error = response.json?["error"] ?? NSNull()
    let data =
        (try? JSONSerialization.data(withJSONObject: error, options: [.sortedKeys, .fragmentsAllowed])) ?? Data()
    return "\(response.status) " + String(decoding: data, as: UTF8.self)
}

extension HTTPClient.Response {
    /// `data.subscriber` of an envelope.
    var subscriber: [String: Any]? { data?["subscriber"] as? [String: Any] }
    /// `data.tenant` of an envelope.
    var tenant: [String: Any]? { data?["tenant"] as? [String: Any] }
}

extension TestTenant {
    /// Backend headers of a workspace key acting in this tenant.
    func workspace(_ key: String) -> [String: String] {
        ["Authorization": "Bearer \(key)", "BuzzKit-Tenant": id]
    }
}

/// One in-process application with one tenant, closed with the suite: the common fixture of the
/// suites that exercise a single tenant. A test that runs on every store starts with
/// `try use(store)` (Swift Testing makes a new suite instance per argument).
class TenantSuite {
    var app: InProcessApp
    var tenant: TestTenant

    init(_ store: StoreKind = .sqlite) throws {
        app = try InProcessApp(store: store)
        tenant = try app.createTenant()
    }
    deinit { app.close() }

    /// Moves this test onto a fresh app over `store` (the SQLite one made by `init` is closed).
    func use(_ store: StoreKind) throws {
        guard store != .sqlite else { return }
        app.close()
        app = try InProcessApp(store: store)
        tenant = try app.createTenant()
    }
}

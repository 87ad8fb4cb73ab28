import Testing

@testable import HTTP1

/// Methods compare by a code for the ones the server knows and by their text otherwise; either
/// way the answer must be the text's, and equal methods must hash alike.
@Suite struct HTTPMethodTests {
    static let tokens = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "get", "Get", "TRACE", "BREW", ""]

    @Test func equalityIsTheTexts() {
        for a in Self.tokens {
            for b in Self.tokens {
                let left = HTTPMethod(rawValue: a)
                let right = HTTPMethod(rawValue: b)
                #expect((left == right) == (a == b), "\(a) vs \(b)")
                if left == right { #expect(left.hashValue == right.hashValue) }
            }
        }
    }

    @Test func parsedAndNamedMethodsAreTheSame() {
        let named: [HTTPMethod] = [.GET, .HEAD, .POST, .PUT, .PATCH, .DELETE, .OPTIONS]
        for method in named {
            let parsed = HTTPMethod(rawValue: method.rawValue)
            #expect(parsed == method)
            #expect(Set([parsed, method]).count == 1)
            // Every other named method differs, even where the texts share a prefix.
            #expect(named.filter { $0 == parsed }.count == 1)
        }
        #expect(HTTPMethod(rawValue: "TRACE") != HTTPMethod(rawValue: "BREW"))
        #expect(HTTPMethod(rawValue: "get") != .GET)
    }
}

import HTTP1
import Testing

@testable import HTTPServer

/// `Router` with named slots, so the cases below read as names.
private struct NamedRouter<Name: Equatable> {
    enum Match {
        case found(Name, parameters: PathParameters)
        case methodNotAllowed(allowed: [HTTPMethod])
        case notFound
    }
    private var router = Router()
    private var names: [Name] = []

    mutating func add(_ method: HTTPMethod, _ path: String, _ name: Name) {
        router.add(method, path, slot: names.count)
        names.append(name)
    }

    /// A path without a query, matched as the target it is.
    func match(_ method: HTTPMethod, path: Substring) -> Match {
        named(router.match(method, target: String(path)))
    }

    func match(_ method: HTTPMethod, target: String) -> Match {
        named(router.match(method, target: target))
    }

    private func named(_ match: Router.Match) -> Match {
        switch match {
        case .found(let slot, let parameters): .found(names[slot], parameters: parameters)
        case .methodNotAllowed(let allowed): .methodNotAllowed(allowed: allowed)
        case .notFound: .notFound
        }
    }
}

@Suite struct RouterTests {
    private func router() -> NamedRouter<String> {
        var router = NamedRouter<String>()
        router.add(.GET, "/v1/subscribers/:id", "show")
        router.add(.DELETE, "/v1/subscribers/:id", "delete")
        router.add(.GET, "/v1/subscribers/:id/events", "events")
        router.add(.GET, "/v1/subscribers/search", "search")
        router.add(.POST, "/v1/subscribers", "create")
        router.add(.GET, "/healthz", "health")
        return router
    }

    @Test func aTargetIsMatchedByItsPathAlone() {
        // What the application routes: the whole target, its query cut off at the first `?`; an
        // escaped `?` (%3F) belongs to the parameter.
        let cases: [(target: String, name: String, id: String?)] = [
            ("/v1/subscribers/abc?x=1&y=/v1/z", "show", "abc"),
            ("/v1/subscribers/a%3Fb", "show", "a?b"),
            ("/v1/subscribers/abc/events?", "events", "abc"),
            ("/healthz?person=user_000001", "health", nil),
        ]
        for (target, name, id) in cases {
            guard case .found(let found, let parameters) = router().match(.GET, target: target) else {
                Issue.record("no match for \(target)")
                continue
            }
            #expect(found == name, "\(target)")
            #expect(parameters["id"] == id, "\(target)")
        }
        guard case .notFound = router().match(.GET, target: "/?/healthz") else {
            Issue.record("a path after the query matched")
            return
        }
    }

    @Test func literalAndParameterRoutes() {
        guard case .found(let handler, let parameters) = router().match(.GET, path: "/v1/subscribers/abc/events") else {
            Issue.record("no match")
            return
        }
        #expect(handler == "events")
        #expect(parameters == ["id": "abc"])
    }

    /// A parameter taken on a branch that then fails is given back before the next branch
    /// takes its own (the first parameter is held apart from the rest: both places must empty).
    @Test func aFailedBranchLeavesNoParameterBehind() {
        var router = NamedRouter<String>()
        router.add(.GET, "/k/:a/:b/one", "two parameters")
        router.add(.GET, "/k/q/:z/two", "literal first")
        guard case .found(let handler, let parameters) = router.match(.GET, path: "/k/q/v/one") else {
            Issue.record("no match")
            return
        }
        #expect(handler == "two parameters")
        #expect(parameters == ["a": "q", "b": "v"])
        #expect(parameters["a"] == "q" && parameters["b"] == "v" && parameters["z"] == nil)
        guard case .found(let other, let its) = router.match(.GET, path: "/k/q/v/two") else {
            Issue.record("no match")
            return
        }
        #expect(other == "literal first")
        #expect(its == ["z": "v"])
    }

    @Test func literalWinsOverParameter() {
        guard case .found(let handler, let parameters) = router().match(.GET, path: "/v1/subscribers/search") else {
            Issue.record("no match")
            return
        }
        #expect(handler == "search")
        #expect(parameters.isEmpty)
    }

    /// A literal matches only a segment of its length with every byte equal: one byte off at
    /// either end, a prefix or an extension of it goes to the parameter or to nothing.
    @Test func aLiteralMatchesOnlyTheWholeSegment() {
        let router = router()
        for near in ["searcH", "Search", "searc", "searchx"] {
            let path = Substring("/v1/subscribers/\(near)")
            guard case .found(let handler, let parameters) = router.match(.GET, path: path) else {
                Issue.record("no match for \(near)")
                continue
            }
            #expect(handler == "show", "\(near)")
            #expect(parameters == ["id": near])
        }
        for near in ["healthZ", "health", "healthzz", "Healthz"] {
            guard case .notFound = router.match(.GET, path: Substring("/\(near)")) else {
                Issue.record("/\(near) matched")
                continue
            }
        }
    }

    @Test func parameterIsTriedWhenLiteralBranchDeadEnds() {
        // "search" is a literal leaf with no /events child; the :id branch must still be found.
        guard case .found(let handler, let parameters) = router().match(.GET, path: "/v1/subscribers/search/events")
        else {
            Issue.record("no match")
            return
        }
        #expect(handler == "events")
        #expect(parameters == ["id": "search"])
    }

    @Test func headFallsBackToGet() {
        guard case .found(let handler, _) = router().match(.HEAD, path: "/healthz") else {
            Issue.record("no match")
            return
        }
        #expect(handler == "health")
    }

    @Test func methodNotAllowedListsMethods() {
        guard case .methodNotAllowed(let allowed) = router().match(.PUT, path: "/v1/subscribers/x") else {
            Issue.record("expected 405")
            return
        }
        #expect(Set(allowed.map(\.rawValue)) == ["GET", "DELETE", "HEAD"])
    }

    @Test func notFound() {
        guard case .notFound = router().match(.GET, path: "/v2/nothing") else {
            Issue.record("expected notFound")
            return
        }
        guard case .notFound = router().match(.GET, path: "/v1") else {
            Issue.record("an inner node without handlers must not match")
            return
        }
    }

    @Test func parametersArePercentDecoded() {
        guard case .found(_, let parameters) = router().match(.GET, path: "/v1/subscribers/a%20b%2Fc%C3%A9") else {
            Issue.record("no match")
            return
        }
        #expect(parameters["id"] == "a b/cé")
    }

    @Test func invalidPercentEncodingDoesNotMatch() {
        for path in ["/v1/subscribers/%ZZ", "/v1/subscribers/%C3", "/v1/subscribers/%FF", "/v1/subscribers/abc%2"] {
            guard case .notFound = router().match(.GET, path: path[...]) else {
                Issue.record("\(path) should not match")
                continue
            }
        }
    }

    @Test func trailingSlashAndRoot() {
        var router = NamedRouter<Int>()
        router.add(.GET, "/", 1)
        guard case .found(1, _) = router.match(.GET, path: "/") else {
            Issue.record("root")
            return
        }
        guard case .found("create", _) = self.router().match(.POST, path: "/v1/subscribers/") else {
            Issue.record("trailing slash")
            return
        }
    }
}

import API
import Foundation
import HTTP1
import JSON
import TestSupport
import Testing

/// The hand-written `openapi.json` and the router must list the same operations (STYLE.md), and
/// the document must keep its own rules: OpenAPI 3.1, a description on every field, named
/// schemas with `required`, responses on every operation, every `$ref` resolvable.
@Suite struct OpenAPIDocumentTests {
    static let methods = ["get", "put", "post", "delete", "patch", "head", "options", "trace"]

    static func loadBytes() throws -> [UInt8] {
        Array(try Data(contentsOf: repositoryRoot.appendingPathComponent("openapi.json")))
    }

    static func loadDocument() throws -> JSONObject {
        let value = try JSONParser.parse(try loadBytes(), maxDepth: 128)
        return try #require(value.objectValue, "openapi.json is not a JSON object")
    }

    /// Every `(METHOD, /path/{param})` of the document, with its `operationId`.
    static func documentedOperations(_ document: JSONObject) throws -> [String: String] {
        let paths = try #require(document["paths"]?.objectValue, "no paths")
        var operations: [String: String] = [:]
        for (path, item) in paths {
            let item = try #require(item.objectValue, "\(path) is not an object")
            for method in methods {
                guard let operation = item[method]?.objectValue else { continue }
                let id = try #require(operation["operationId"]?.stringValue, "\(method) \(path) has no operationId")
                operations["\(method.uppercased()) \(path)"] = id
            }
        }
        return operations
    }

    /// The routes the application registers, `:param` written as `{param}`.
    static func registeredRoutes() throws -> [String: String] {
        let app = try InProcessApp()
        defer { app.close() }
        var routes: [String: String] = [:]
        for route in app.application.routes {
            let path = route.path.split(separator: "/", omittingEmptySubsequences: false)
                .map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }
                .joined(separator: "/")
            let key = "\(route.method.rawValue) \(path)"
            #expect(routes[key] == nil, "route \(key) registered twice")
            routes[key] = route.operationID
        }
        return routes
    }

    @Test func parsesAsOpenAPI31() throws {
        let document = try Self.loadDocument()
        let version = try #require(document["openapi"]?.stringValue)
        #expect(version.hasPrefix("3.1."), "openapi is \(version), not 3.1.x")
        #expect(document["info"]?["title"]?.stringValue?.isEmpty == false)
        #expect(document["info"]?["version"]?.stringValue?.isEmpty == false)
    }

    @Test func operationsMatchTheRouter() throws {
        let documented = try Self.documentedOperations(try Self.loadDocument())
        let registered = try Self.registeredRoutes()
        #expect(!registered.isEmpty)
        let missing = Set(registered.keys).subtracting(documented.keys).sorted()
        let extra = Set(documented.keys).subtracting(registered.keys).sorted()
        #expect(missing.isEmpty, "routes missing from openapi.json: \(missing)")
        #expect(extra.isEmpty, "operations in openapi.json that no route serves: \(extra)")
        for (key, operationID) in registered {
            if let documentedID = documented[key] {
                #expect(documentedID == operationID, "\(key): operationId \(documentedID), route says \(operationID)")
            }
        }
        let ids = Array(documented.values)
        #expect(Set(ids).count == ids.count, "operationIds are not unique")
        for id in ids {
            let first = id.unicodeScalars.first
            #expect(first.map { CharacterSet.lowercaseLetters.contains($0) } == true, "\(id) is not camelCase")
            #expect(id.allSatisfy { $0.isLetter || $0.isNumber }, "\(id) is not camelCase")
        }
    }

    @Test func everyOperationIsDescribedAndAnswers() throws {
        let document = try Self.loadDocument()
        let paths = try #require(document["paths"]?.objectValue)
        for (path, item) in paths {
            for method in Self.methods {
                guard let operation = item[method]?.objectValue else { continue }
                let name = "\(method.uppercased()) \(path)"
                #expect(operation["description"]?.stringValue?.isEmpty == false, "\(name) has no description")
                let responses = try #require(operation["responses"]?.objectValue, "\(name) has no responses")
                #expect(responses.keys.contains { $0.hasPrefix("2") }, "\(name) has no success response")
                #expect(
                    responses.keys.contains { $0.hasPrefix("4") || $0.hasPrefix("5") }, "\(name) has no error response")
                for parameter in operation["parameters"]?.arrayValue ?? [] {
                    let resolved = try Self.resolve(parameter, in: document)
                    #expect(
                        resolved["description"]?.stringValue?.isEmpty == false,
                        "\(name): a parameter has no description")
                }
                // Every path template parameter is declared.
                let declared = try (operation["parameters"]?.arrayValue ?? []).map {
                    try Self.resolve($0, in: document)
                }
                .filter { $0["in"]?.stringValue == "path" }.compactMap { $0["name"]?.stringValue }
                let templated = path.split(separator: "/").filter { $0.hasPrefix("{") }.map {
                    String($0.dropFirst().dropLast())
                }
                #expect(
                    Set(declared) == Set(templated), "\(name): path parameters \(declared) vs template \(templated)")
            }
        }
    }

    @Test func everySchemaPropertyHasADescription() throws {
        let document = try Self.loadDocument()
        var problems: [String] = []
        Self.forEachSchema(in: document) { pointer, schema in
            for (name, property) in schema["properties"]?.objectValue ?? [:]
            where property["description"]?.stringValue?.isEmpty != false {
                problems.append("\(pointer)/properties/\(name)")
            }
        }
        #expect(problems.isEmpty, "properties without a description: \(problems)")
    }

    @Test func namedSchemasListWhatIsRequired() throws {
        let document = try Self.loadDocument()
        let schemas = try #require(document["components"]?["schemas"]?.objectValue)
        for (name, schema) in schemas {
            #expect(schema["description"]?.stringValue?.isEmpty == false, "schema \(name) has no description")
            guard let properties = schema["properties"]?.objectValue else { continue }
            let required = try #require(schema["required"]?.arrayValue, "schema \(name) has no required list")
            for field in required {
                #expect(properties[field.stringValue ?? ""] != nil, "schema \(name) requires unknown \(field)")
            }
        }
    }

    @Test func everyReferenceResolves() throws {
        let document = try Self.loadDocument()
        var broken: [String] = []
        Self.walk(.object(document), at: "#") { pointer, object in
            if let reference = object["$ref"]?.stringValue, (try? Self.lookup(reference, in: document)) == nil {
                broken.append("\(pointer): \(reference)")
            }
        }
        #expect(broken.isEmpty, "unresolvable $refs: \(broken)")
    }

    /// The binary serves the file verbatim (the build plugin embedded the current one).
    @Test func servedVerbatim() throws {
        let app = try InProcessApp()
        defer { app.close() }
        let response = try app.send("GET", "/openapi.json")
        #expect(response.status == 200)
        #expect(response.header("Content-Type")?.hasPrefix("application/json") == true)
        #expect(response.body == (try Self.loadBytes()), "the served document differs from openapi.json: rebuild")
    }

    // MARK: - Walking the document

    static func walk(_ value: JSONValue, at pointer: String, _ visit: (String, JSONObject) -> Void) {
        switch value {
        case .object(let object):
            visit(pointer, object)
            for (key, child) in object { walk(child, at: pointer + "/" + key, visit) }
        case .array(let items):
            for (index, child) in items.enumerated() { walk(child, at: pointer + "/\(index)", visit) }
        default:
            break
        }
    }

    /// Calls `visit` on every schema and subschema: components, and every `schema` of a
    /// parameter, header or media type, descending through the JSON Schema keywords that hold schemas.
    static func forEachSchema(in document: JSONObject, _ visit: (String, JSONObject) -> Void) {
        func schema(_ value: JSONValue, at pointer: String) {
            guard let object = value.objectValue else { return }
            visit(pointer, object)
            for keyword in ["properties", "patternProperties", "$defs"] {
                for (name, child) in object[keyword]?.objectValue ?? [:] {
                    schema(child, at: "\(pointer)/\(keyword)/\(name)")
                }
            }
            for keyword in ["items", "additionalProperties", "propertyNames", "not", "contains"] {
                if let child = object[keyword] { schema(child, at: "\(pointer)/\(keyword)") }
            }
            for keyword in ["allOf", "anyOf", "oneOf", "prefixItems"] {
                for (index, child) in (object[keyword]?.arrayValue ?? []).enumerated() {
                    schema(child, at: "\(pointer)/\(keyword)/\(index)")
                }
            }
        }
        for (name, value) in document["components"]?["schemas"]?.objectValue ?? [:] {
            schema(value, at: "#/components/schemas/\(name)")
        }
        walk(.object(document), at: "#") { pointer, object in
            if let value = object["schema"], !pointer.hasPrefix("#/components/schemas") {
                schema(value, at: pointer + "/schema")
            }
        }
    }

    static func lookup(_ reference: String, in document: JSONObject) throws -> JSONObject {
        #expect(reference.hasPrefix("#/"), "only local references: \(reference)")
        var current: JSONValue = .object(document)
        for token in reference.dropFirst(2).split(separator: "/") {
            let key = token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            current = try #require(current[key], "\(reference) does not resolve")
        }
        return try #require(current.objectValue, "\(reference) is not an object")
    }

    static func resolve(_ value: JSONValue, in document: JSONObject) throws -> JSONObject {
        let object = try #require(value.objectValue)
        guard let reference = object["$ref"]?.stringValue else { return object }
        return try lookup(reference, in: document)
    }
}

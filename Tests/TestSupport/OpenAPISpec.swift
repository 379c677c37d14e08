import Foundation

/// `docs/openapi.yaml` as a tree (`YAMLReader`), with the statuses and error codes it declares per
/// operation, the schemas to check bodies against (`JSONSchema`), and `problems(with:)` to check
/// an answer of the server against the response declared for it.
package struct OpenAPISpec: Sendable {
    /// An operation: upper-case method and path template as written in `paths`.
    package struct Key: Hashable, Sendable {
        /// `GET`, `POST`, ...
        package var method: String
        /// The path as written in `paths`, e.g. `/api/reports/links`.
        package var path: String

        /// Names the operation `method path`.
        package init(method: String, path: String) {
            self.method = method
            self.path = path
        }
    }
    /// A status that is not a number or a `$ref` that leads nowhere.
    package struct Failure: Error, CustomStringConvertible {
        /// What and where.
        package var description: String
    }

    /// The whole file.
    package let document: YAML
    /// Validates against the file's schemas, following its `$ref`s.
    package let validator: JSONSchema
    /// Declared statuses per operation, each with its error codes (empty when none are listed).
    package private(set) var operations: [Key: [Int: Set<String>]] = [:]
    /// Codes for unknown paths.
    package private(set) var unmatched: [Int: Set<String>] = [:]
    /// Every code in `components.schemas.Error`.
    package private(set) var allErrorCodes: Set<String> = []
    /// Every per-event code in `components.schemas.Rejection`.
    package private(set) var rejectionCodes: Set<String> = []

    /// The keys of a path item that name operations (the others are `parameters`, `summary`, ...).
    package static let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

    /// Reads `docs/openapi.yaml` of the repository the tests were built from.
    ///
    /// - Throws: when the file cannot be read, or `YAMLReader.Failure` / `Failure` for its content.
    package static func load() throws -> OpenAPISpec {
        try OpenAPISpec(text: String(contentsOfFile: RepositoryRoot.path + "/docs/openapi.yaml", encoding: .utf8))
    }

    /// Reads a spec from its text (tests edit a copy of the file to see the checks fail).
    ///
    /// - Throws: `YAMLReader.Failure` or `Failure`.
    package init(text: String) throws {
        document = try YAMLReader.read(text)
        validator = JSONSchema(document: document)
        for (path, item) in document["paths"]?.pairs ?? [] {
            for (method, operation) in item.pairs where Self.methods.contains(method) {
                let key = Key(method: method.uppercased(), path: path)
                operations[key] = try statuses(operation["responses"], at: "\(method) \(path)")
            }
        }
        unmatched = try statuses(document["x-unmatched-path"], at: "x-unmatched-path")
        let schemas = document["components"]?["schemas"]
        allErrorCodes = Self.texts(schemas?["Error"]?["properties"]?["error"]?["properties"]?["code"]?["enum"])
        rejectionCodes = Self.texts(schemas?["Rejection"]?["properties"]?["code"]?["enum"])
    }

    private func statuses(_ responses: YAML?, at place: String) throws -> [Int: Set<String>] {
        var statuses: [Int: Set<String>] = [:]
        for (status, response) in responses?.pairs ?? [] {
            guard let code = Int(status) else { throw Failure(description: "\(place): status \(status)") }
            guard let response = validator.resolve(response) else {
                throw Failure(description: "\(place) \(status): unresolvable $ref")
            }
            statuses[code] = Self.texts(response["x-error-codes"])
        }
        return statuses
    }

    private static func texts(_ node: YAML?) -> Set<String> { Set(node?.items.compactMap(\.text) ?? []) }

    /// The operation for `key`, resolved.
    package func operation(_ key: Key) -> YAML? {
        document["paths"]?[key.path]?[key.method.lowercased()]
    }

    /// The response declared for `status` on `key`, or on unknown paths when `key` is nil; resolved.
    package func response(_ key: Key?, status: Int) -> YAML? {
        let responses = key.map { operation($0)?["responses"] } ?? document["x-unmatched-path"]
        return responses?["\(status)"].flatMap(validator.resolve)
    }

    /// The JSON request body schema of `key`.
    package func requestSchema(_ key: Key) -> YAML? {
        operation(key)?["requestBody"]?["content"]?["application/json"]?["schema"]
    }

    /// A named schema of `components/schemas`.
    package func schema(_ name: String) -> YAML? {
        document["components"]?["schemas"]?[name]
    }
}

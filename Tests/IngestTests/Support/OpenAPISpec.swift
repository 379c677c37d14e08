import Foundation
import TestSupport

/// The statuses and error codes `docs/openapi.yaml` declares, read with a small line-based
/// reader that understands exactly the layout that file uses (paths → method → responses →
/// status → `x-error-codes` or a `$ref` to `components/responses`).
struct OpenAPISpec {
    struct Key: Hashable {
        var method: String
        var path: String
    }
    /// Declared statuses per operation, each with its error codes (empty when none are listed).
    var operations: [Key: [Int: Set<String>]] = [:]
    /// Codes for unknown paths.
    var unmatched: [Int: Set<String>] = [:]
    /// Every code in `components.schemas.Error`.
    var allErrorCodes: Set<String> = []

    static func load() throws -> OpenAPISpec {
        let text = try String(contentsOfFile: RepositoryRoot.path + "/docs/openapi.yaml", encoding: .utf8)
        return OpenAPISpec(text: text)
    }

    init(text: String) {
        var componentResponses: [String: Set<String>] = [:]
        var refs: [(Key, Int, String)] = []
        var top = "", path = "", method = "", status = 0, componentSection = "", componentName = ""
        for raw in text.split(separator: "\n", omittingEmptySubsequences: true) {
            let line = String(raw)
            let indent = line.prefix(while: { $0 == " " }).count
            let content = line.trimmingCharacters(in: .whitespaces)
            if content.hasPrefix("#") { continue }
            switch indent {
            case 0: top = String(content.dropLast())
            case 2 where top == "paths": path = String(content.dropLast())
            case 2 where top == "components": componentSection = String(content.dropLast())
            case 2 where top == "x-unmatched-path": status = Self.status(content) ?? 0
            case 4 where top == "paths": method = String(content.dropLast()).uppercased()
            case 4 where top == "components": componentName = String(content.dropLast())
            case 4 where top == "x-unmatched-path":
                if let codes = Self.list(content, key: "x-error-codes") { unmatched[status] = codes }
            case 6 where top == "components" && componentSection == "responses":
                if let codes = Self.list(content, key: "x-error-codes") { componentResponses[componentName] = codes }
            case 8 where top == "paths":
                if let code = Self.status(content) {
                    status = code
                    operations[Key(method: method, path: path), default: [:]][code] = []
                }
            case 10 where top == "paths":
                let key = Key(method: method, path: path)
                if let codes = Self.list(content, key: "x-error-codes") { operations[key]![status] = codes }
                if content.hasPrefix("$ref: '#/components/responses/") {
                    refs.append((key, status, String(content.dropFirst(30).dropLast())))
                }
            default: break
            }
            if top == "components", content.hasPrefix("enum: [not_found") {
                allErrorCodes = Self.list(content, key: "enum") ?? []
            }
        }
        for (key, status, name) in refs { operations[key]![status] = componentResponses[name] ?? [] }
    }

    private static func status(_ content: String) -> Int? {
        guard content.hasPrefix("'"), content.hasSuffix("':") else { return nil }
        return Int(content.dropFirst().dropLast(2))
    }

    private static func list(_ content: String, key: String) -> Set<String>? {
        guard content.hasPrefix(key + ": [") else { return nil }
        let inner = content.dropFirst(key.count + 3).dropLast()
        return Set(inner.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
    }
}

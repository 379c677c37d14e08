import Foundation

/// Checks JSON documents against the OpenAPI 3.0 schemas of `docs/openapi.yaml`: the keywords
/// that file uses, each implemented. A keyword or format the validator does not know is itself a
/// problem, so a schema that grows a new constraint fails the tests until the validator checks it,
/// rather than passing unchecked.
package struct JSONSchema: Sendable {
    /// A JSON value, decoded with integers, numbers and Booleans kept apart.
    package enum Instance: Decodable, Equatable, Sendable {
        case null
        case bool(Bool)
        case integer(Int)
        case number(Double)
        case string(String)
        case array([Instance])
        case object([String: Instance])

        /// Decodes any JSON value.
        package init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let value = try? container.decode(Bool.self) {
                self = .bool(value)
            } else if let value = try? container.decode(Int.self) {
                self = .integer(value)
            } else if let value = try? container.decode(Double.self) {
                self = .number(value)
            } else if let value = try? container.decode(String.self) {
                self = .string(value)
            } else if let value = try? container.decode([Instance].self) {
                self = .array(value)
            } else {
                self = .object(try container.decode([String: Instance].self))
            }
        }

        /// The JSON Schema type name.
        package var type: String {
            switch self {
            case .null: "null"
            case .bool: "boolean"
            case .integer: "integer"
            case .number: "number"
            case .string: "string"
            case .array: "array"
            case .object: "object"
            }
        }

        /// Parses `bytes`; nil when they are not JSON.
        package static func parse(_ bytes: [UInt8]) -> Instance? {
            try? JSONDecoder().decode(Instance.self, from: Data(bytes))
        }
    }

    /// Keywords with no effect on validity.
    package static let annotations: Set<String> = ["description", "default", "example", "title"]
    /// Keywords `validate` checks.
    package static let checked: Set<String> = [
        "$ref", "type", "nullable", "enum", "format", "properties", "required", "additionalProperties", "items",
        "minItems", "maxItems", "minLength", "maxLength", "minimum", "maximum", "allOf", "oneOf", "anyOf",
    ]

    /// The `type`s `validate` knows.
    package static let types: Set<String> = ["object", "array", "string", "boolean", "integer", "number"]
    /// The `format`s `validate` checks, each as the pattern a string must match (RFC 3339).
    package static let formats = [
        "date": #"^\d{4}-\d{2}-\d{2}$"#,
        "date-time": #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"#,
    ]

    /// The whole document, for `$ref`s.
    package let document: YAML
    /// When true, an object whose schema lists `properties` and says nothing of
    /// `additionalProperties` may hold no other member: the spec must describe every field.
    package var isStrict = true

    /// The problems of `instance` against `schema`, each with its JSON path; empty when valid.
    package func problems(_ instance: Instance, _ schema: YAML, at path: String = "$") -> [String] {
        var problems: [String] = []
        validate(instance, schema, at: path, checksMembers: isStrict, into: &problems)
        return problems
    }

    /// Every keyword, type and format in the document's schemas (`components/schemas` and every
    /// `schema:`) that `problems` would not check, as `place: keyword`; empty when all are checked.
    package func unsupportedKeywords() -> [String] {
        var found: [String] = []
        func walk(_ node: YAML, at place: String) {
            for (key, value) in node.pairs {
                if key == "schema" {
                    schemaWalk(value, at: place + "/schema")
                } else {
                    walk(value, at: place + "/" + key)
                }
            }
            for (index, item) in node.items.enumerated() { walk(item, at: place + "/\(index)") }
        }
        func schemaWalk(_ schema: YAML, at place: String) {
            for (keyword, value) in schema.pairs {
                switch keyword {
                case "properties": for (name, property) in value.pairs { schemaWalk(property, at: place + "/" + name) }
                case "items",
                    "additionalProperties" where value.text == nil:
                    schemaWalk(value, at: place + "/" + keyword)
                case "allOf", "oneOf", "anyOf": for part in value.items { schemaWalk(part, at: place + "/" + keyword) }
                case "type" where !Self.types.contains(value.text ?? ""),
                    "format" where !Self.formats.keys.contains(value.text ?? ""):
                    found.append("\(place): \(keyword) \(value.text ?? "")")
                default:
                    if !Self.checked.contains(keyword) && !Self.annotations.contains(keyword) {
                        found.append("\(place): \(keyword)")
                    }
                }
            }
        }
        for (name, schema) in document["components"]?["schemas"]?.pairs ?? [] {
            schemaWalk(schema, at: "components/schemas/" + name)
        }
        walk(document, at: "")
        return found
    }

    /// Follows `$ref: '#/a/b'` (repeatedly) to the node it names.
    package func resolve(_ node: YAML) -> YAML? {
        var node = node
        for _ in 0..<16 {
            guard let ref = node["$ref"]?.text else { return node }
            guard ref.hasPrefix("#/") else { return nil }
            var target: YAML? = document
            for part in ref.dropFirst(2).split(separator: "/") { target = target?[String(part)] }
            guard let target else { return nil }
            node = target
        }
        return nil
    }

    private func validate(
        _ instance: Instance, _ node: YAML, at path: String, checksMembers: Bool, into problems: inout [String]
    ) {
        guard let schema = resolve(node) else {
            return problems.append("\(path): unresolvable \(node["$ref"]?.text ?? "")")
        }
        if case .null = instance, schema["nullable"]?.text == "true" { return }
        for (keyword, value) in schema.pairs {
            switch keyword {
            case "$ref", "nullable", "properties", "additionalProperties", "required":
                // `$ref` was resolved; `nullable` above; the object keywords together below.
                break
            case "type": checkType(instance, value.text ?? "", at: path, into: &problems)
            case "enum":
                if !value.items.contains(where: { Self.equals(instance, $0) }) {
                    problems.append("\(path): \(instance) is not one of \(value.items.compactMap(\.text))")
                }
            case "format": checkFormat(instance, value.text ?? "", at: path, into: &problems)
            case "items":
                guard case .array(let elements) = instance else { break }
                for (index, element) in elements.enumerated() {
                    validate(element, value, at: "\(path)[\(index)]", checksMembers: isStrict, into: &problems)
                }
            case "minItems", "maxItems", "minLength", "maxLength", "minimum", "maximum":
                checkBound(keyword, Double(value.text ?? "") ?? .nan, instance, at: path, into: &problems)
            case "allOf":
                // Each part sees only its own properties; the members are checked against all of them below.
                for part in value.items { validate(instance, part, at: path, checksMembers: false, into: &problems) }
            case "oneOf", "anyOf":
                let matching = value.items.filter { self.problems(instance, $0, at: path).isEmpty }.count
                if keyword == "oneOf" ? matching != 1 : matching == 0 {
                    problems.append("\(path): matches \(matching) of the \(keyword) schemas")
                }
            default:
                if !Self.annotations.contains(keyword) { problems.append("\(path): unsupported keyword \(keyword)") }
            }
        }
        guard case .object(let members) = instance else { return }
        for name in schema["required"]?.items.compactMap(\.text) ?? [] where members[name] == nil {
            problems.append("\(path): missing required \(name)")
        }
        let properties = schema["properties"]
        for (name, member) in members.sorted(by: { $0.key < $1.key }) {
            if let property = properties?[name] {
                validate(member, property, at: "\(path).\(name)", checksMembers: isStrict, into: &problems)
            } else if let additional = schema["additionalProperties"] {
                if additional.text == "false" {
                    problems.append("\(path): member \(name) is not allowed")
                } else if additional.text != "true" {
                    validate(member, additional, at: "\(path).\(name)", checksMembers: isStrict, into: &problems)
                }
            } else if checksMembers, let known = knownMembers(schema), !known.contains(name) {
                problems.append("\(path): member \(name) is not described by the schema")
            }
        }
    }

    /// The member names a schema describes, through `allOf`; nil when it describes none (free-form).
    private func knownMembers(_ schema: YAML) -> Set<String>? {
        var names = Set((schema["properties"]?.pairs ?? []).map(\.key))
        for part in schema["allOf"]?.items ?? [] {
            guard let part = resolve(part) else { continue }
            if part["additionalProperties"] != nil { return nil }
            names.formUnion(knownMembers(part) ?? [])
        }
        return names.isEmpty ? nil : names
    }

    private func checkType(_ instance: Instance, _ type: String, at path: String, into problems: inout [String]) {
        guard Self.types.contains(type) else {
            return problems.append("\(path): unsupported type \(type)")
        }
        let matches =
            switch instance {
            case .integer: type == "integer" || type == "number"
            case .number(let value): type == "number" || (type == "integer" && value.rounded() == value)
            default: instance.type == type
            }
        if !matches { problems.append("\(path): \(instance) is not of type \(type)") }
    }

    private func checkFormat(_ instance: Instance, _ format: String, at path: String, into problems: inout [String]) {
        guard let pattern = Self.formats[format] else {
            return problems.append("\(path): unsupported format \(format)")
        }
        guard case .string(let text) = instance else { return }
        if text.range(of: pattern, options: .regularExpression) == nil {
            problems.append("\(path): \(text) is not a \(format)")
        }
    }

    private func checkBound(
        _ keyword: String, _ bound: Double, _ instance: Instance, at path: String, into problems: inout [String]
    ) {
        let measured: Double? =
            switch (keyword, instance) {
            case ("minItems", .array(let items)), ("maxItems", .array(let items)): Double(items.count)
            case ("minLength", .string(let text)), ("maxLength", .string(let text)): Double(text.count)
            case ("minimum", .integer(let value)), ("maximum", .integer(let value)): Double(value)
            case ("minimum", .number(let value)), ("maximum", .number(let value)): value
            default: nil
            }
        guard let measured else { return }
        if bound.isNaN || (keyword.hasPrefix("min") ? measured < bound : measured > bound) {
            problems.append("\(path): \(keyword) \(bound) not met (\(measured))")
        }
    }

    /// Whether a JSON value equals an `enum` entry (a YAML scalar).
    private static func equals(_ instance: Instance, _ entry: YAML) -> Bool {
        guard case .scalar(let text, let isQuoted) = entry else { return false }
        switch instance {
        case .string(let value): return value == text
        case .integer(let value): return !isQuoted && Int(text) == value
        case .number(let value): return !isQuoted && Double(text) == value
        case .bool(let value): return !isQuoted && text == String(value)
        case .null: return !isQuoted && (text == "null" || text == "~")
        case .array, .object: return false
        }
    }
}

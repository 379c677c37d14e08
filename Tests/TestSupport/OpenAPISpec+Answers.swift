import Foundation

/// Checking one answer of the server against the response `docs/openapi.yaml` declares for it.
extension OpenAPISpec {
    /// What is wrong with an answer to `method path` (a query string is ignored): an undeclared
    /// status, a missing required header or a header off its schema, a Content-Type the response
    /// does not list, a body off the schema for that Content-Type, an error code not in
    /// `x-error-codes`. A HEAD answer must have no body. Empty when the answer is as declared.
    ///
    /// - Parameters:
    ///   - status: the answer's status code.
    ///   - headers: its headers; names are compared case-insensitively.
    ///   - body: its body as received (empty after HEAD).
    ///   - method: the request's method, e.g. `GET`.
    ///   - path: the request's path, e.g. `/api/reports/links?from=2026-06-01`.
    package func problems(
        status: Int, headers: [String: String], body: [UInt8], to method: String, _ path: String
    ) -> [String] {
        let answer = Answer(status: status, headers: headers, body: body)
        let path = String(path.prefix(while: { $0 != "?" }))
        let key = operationKey(method: method, path: path, status: answer.status)
        guard let response = response(key, status: answer.status) else {
            let place = key.map { "\($0.method) \($0.path)" } ?? "unknown paths"
            return ["status \(answer.status) is not declared for \(place)"]
        }
        var problems = headerProblems(answer, response)
        let codes = (key.flatMap { operations[$0] } ?? unmatched)[answer.status] ?? []
        if let code = answer.errorCode, !codes.contains(code) {
            problems.append("error code \(code) is not declared for \(answer.status)")
        }
        if method == "HEAD" {
            if !answer.body.isEmpty { problems.append("a HEAD answer has a body") }
            return problems
        }
        guard let content = response["content"] else {
            if !answer.body.isEmpty { problems.append("a body, but the response declares no content") }
            return problems
        }
        guard let contentType = answer.header("Content-Type") else {
            // `x-no-content-type`: the spec's way to say an answer the server cannot shape (libmicrohttpd's own) has none.
            if response["x-no-content-type"]?.text != "true" { problems.append("no Content-Type header") }
            return problems
        }
        let mediaType = contentType.prefix(while: { $0 != ";" }).trimmingCharacters(in: .whitespaces).lowercased()
        guard let schema = content[mediaType]?["schema"] else {
            problems.append("Content-Type \(contentType) is not declared (\(content.pairs.map(\.key)))")
            return problems
        }
        let instance: JSONSchema.Instance?
        if mediaType.hasSuffix("json") {
            instance = JSONSchema.Instance.parse(answer.body)
        } else {
            instance = String(validating: answer.body, as: UTF8.self).map { .string($0) }
        }
        guard let instance else { return problems + ["the body is not valid \(mediaType)"] }
        return problems + validator.problems(instance, schema).map { "body \($0)" }
    }

    /// The operation whose responses describe an answer to `method path`: the method's own, or for a
    /// 405 the path's GET or POST operation; nil for unknown paths (`x-unmatched-path`).
    private func operationKey(method: String, path: String, status: Int) -> Key? {
        let own = Key(method: method, path: path)
        if operations[own] != nil { return own }
        return ["GET", "POST"].map { Key(method: $0, path: path) }.first { operations[$0] != nil }
    }

    private func headerProblems(_ answer: Answer, _ response: YAML) -> [String] {
        var problems: [String] = []
        for (name, header) in response["headers"]?.pairs ?? [] {
            guard let header = validator.resolve(header) else {
                problems.append("header \(name): unresolvable $ref")
                continue
            }
            for keyword in header.pairs.map(\.key) where !["schema", "required", "description"].contains(keyword) {
                problems.append("header \(name): unsupported keyword \(keyword)")
            }
            guard let value = answer.header(name) else {
                if header["required"]?.text == "true" { problems.append("required header \(name) is missing") }
                continue
            }
            guard let schema = header["schema"] else { continue }
            let instance: JSONSchema.Instance =
                if validator.resolve(schema)?["type"]?.text == "integer", let number = Int(value) {
                    .integer(number)
                } else {
                    .string(value)
                }
            problems += validator.problems(instance, schema).map { "header \(name) \($0)" }
        }
        return problems
    }

    /// An answer with its header names lower-cased and its error code read from the body.
    private struct Answer {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
        /// The `error.code` of a JSON error body, or nil.
        var errorCode: String?

        init(status: Int, headers: [String: String], body: [UInt8]) {
            self.status = status
            self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }) { first, _ in first }
            self.body = body
            if case .object(let object) = JSONSchema.Instance.parse(body), case .object(let error)? = object["error"],
                case .string(let code)? = error["code"]
            {
                errorCode = code
            }
        }

        func header(_ name: String) -> String? { headers[name.lowercased()] }
    }
}

extension OpenAPISpec {
    /// `problems(status:headers:body:to:_:)` for an answer `HTTP` received.
    package func problems(with answer: HTTP.Response, to method: String, _ path: String) -> [String] {
        problems(status: answer.status, headers: answer.headers, body: Array(answer.body), to: method, path)
    }
}

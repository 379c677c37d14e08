import Foundation
import TestSupport
import Testing

/// The checks of `OpenAPITests` can fail: edited copies of `docs/openapi.yaml` and answers off the
/// spec are reported, and the YAML reader refuses what it does not understand.
@Suite("OpenAPI checks report a spec that does not match")
struct OpenAPICheckerTests {
    static let text = (try? String(contentsOfFile: RepositoryRoot.path + "/docs/openapi.yaml", encoding: .utf8)) ?? ""
    static let errorBody = #"{"error":{"code":"method_not_allowed","message":"GET is not allowed here; use POST"}}"#
    static let event = "/api/analytics/event"

    /// The spec with `old` (which must occur) replaced by `new`.
    static func spec(replacing old: String, with new: String) throws -> OpenAPISpec {
        #expect(text.contains(old), "\(old) is not in the file")
        return try OpenAPISpec(text: text.replacingOccurrences(of: old, with: new))
    }

    static func answer(_ status: Int, _ body: String, headers: [String: String]) -> RawHTTPClient.Response {
        RawHTTPClient.Response(status: status, headers: headers, body: Array(body.utf8))
    }

    static let json = ["content-type": "application/json"]
    static let allowed = ["content-type": "application/json", "allow": "POST"]

    @Test("a good answer passes the unedited spec")
    func goodAnswerPasses() throws {
        let spec = try OpenAPISpec(text: Self.text)
        #expect(
            spec.problems(with: Self.answer(405, Self.errorBody, headers: Self.allowed), to: "GET", Self.event) == [])
        let result = #"{"accepted":1,"rejected":[],"warnings":[]}"#
        #expect(spec.problems(with: Self.answer(200, result, headers: Self.json), to: "POST", Self.event) == [])
    }

    @Test(
        "an answer off the spec is reported",
        arguments: [
            // A required property renamed in the spec.
            (
                "required: [code, message]", "required: [code, mesage]", 405, errorBody, allowed,
                "missing required mesage"
            ),
            // An error code dropped from the enum.
            ("enum: [not_found, method_not_allowed,", "enum: [not_found,", 405, errorBody, allowed, "is not one of"),
            // A required header the answer lacks.
            ("", "", 405, errorBody, json, "required header Allow is missing"),
            // A member the schema does not describe.
            ("", "", 200, #"{"accepted":1,"rejected":[],"warnings":[],"extra":1}"#, json, "member extra"),
            // A member of the wrong type, a wrong Content-Type, an undeclared status.
            ("", "", 200, #"{"accepted":"1","rejected":[],"warnings":[]}"#, json, "is not of type integer"),
            (
                "", "", 200, #"{"accepted":1,"rejected":[],"warnings":[]}"#, ["content-type": "text/plain"],
                "Content-Type"
            ),
            ("", "", 418, "", json, "status 418 is not declared"),
            // A 400 that is both or neither of IngestResult and Error (oneOf).
            ("", "", 400, #"{"error":{"code":"invalid_json"}}"#, json, "matches 0 of the oneOf schemas"),
        ] as [(String, String, Int, String, [String: String], String)])
    func offSpecAnswerIsReported(
        old: String, new: String, status: Int, body: String, headers: [String: String], expected: String
    ) throws {
        let spec = old.isEmpty ? try OpenAPISpec(text: Self.text) : try Self.spec(replacing: old, with: new)
        let problems = spec.problems(with: Self.answer(status, body, headers: headers), to: "POST", Self.event)
        #expect(problems.contains { $0.contains(expected) }, "\(problems)")
    }

    @Test("a keyword, type or format the validator does not check is reported, not ignored")
    func uncheckedKeywordsAreReported() throws {
        for (old, new, reported) in [
            (
                "          minLength: 1\n          maxLength: 128\n        data:",
                "          pattern: '^[a-z]+$'\n        data:", "pattern"
            ),
            ("          format: date-time\n", "          format: email\n", "format email"),
            ("        accepted:\n          type: integer", "        accepted:\n          type: int", "type int"),
        ] {
            let spec = try Self.spec(replacing: old, with: new)
            #expect(spec.validator.unsupportedKeywords().contains { $0.contains(reported) }, "\(reported)")
        }
        let spec = try Self.spec(
            replacing: "        accepted:\n          type: integer", with: "        accepted:\n          multipleOf: 2")
        let result = #"{"accepted":1,"rejected":[],"warnings":[]}"#
        let problems = spec.problems(with: Self.answer(200, result, headers: Self.json), to: "POST", Self.event)
        #expect(problems.contains { $0.contains("unsupported keyword multipleOf") }, "\(problems)")
    }

    @Test("the YAML reader reads the constructs the file uses")
    func yamlSubset() throws {
        let document = try YAMLReader.read(
            """
            # a comment
            a: 'x: y'
            b: [one, "two", '']
            c:
              - k: v
                l: 2
              - plain
            d: |
              line one
                indented
            e:
            - 1
            """)
        #expect(document["a"]?.text == "x: y")
        #expect(document["b"]?.items.compactMap(\.text) == ["one", "two", ""])
        #expect(document["c"]?.items.first?["l"]?.text == "2")
        #expect(document["c"]?.items.last?.text == "plain")
        #expect(document["d"]?.text == "line one\n  indented\n")
        #expect(document["e"]?.items.count == 1)
    }

    @Test(
        "the YAML reader refuses what it does not read instead of guessing",
        arguments: ["a: &anchor x", "a: {b: c}", "a: >\n  folded", "a: b: c", "a: 1\na: 2", "a:\n  b: 1\n    c: 2"])
    func yamlRefuses(text: String) {
        #expect(throws: YAMLReader.Failure.self) { try YAMLReader.read(text) }
    }
}

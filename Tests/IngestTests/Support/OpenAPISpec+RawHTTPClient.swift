import TestSupport

extension OpenAPISpec {
    /// `problems(status:headers:body:to:_:)` for an answer `RawHTTPClient` read.
    func problems(with answer: RawHTTPClient.Response, to method: String, _ path: String) -> [String] {
        problems(status: answer.status, headers: answer.headers, body: answer.body, to: method, path)
    }
}

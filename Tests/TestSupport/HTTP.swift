package import Foundation

#if canImport(FoundationNetworking)
    package import FoundationNetworking
#endif

/// A blocking HTTP call for tests (URLSession under a semaphore, bounded by a timeout).
package enum HTTP {
    /// A finished exchange.
    package struct Response: Sendable {
        package var status: Int
        package var headers: [String: String]
        package var body: Data
        /// The body as UTF-8 text.
        package var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// Sends `request` and waits for the answer, at most `timeout` seconds.
    package static func send(_ request: URLRequest, timeout: TimeInterval = 15) throws -> Response {
        var request = request
        request.timeoutInterval = timeout
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox()
        let task = URLSession.shared.dataTask(with: request) { data, response, error in
            box.set(data: data, response: response as? HTTPURLResponse, error: error)
            done.signal()
        }
        task.resume()
        guard done.wait(timeout: .now() + timeout + 1) == .success else {
            task.cancel()
            throw URLError(.timedOut)
        }
        return try box.result()
    }

    /// A POST of `body` as JSON to `url`; the answer's status code.
    package static func postJSON(_ url: String, body: String, headers: [String: String]) throws -> Int {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = "POST"
        request.httpBody = Data(body.utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return try send(request).status
    }

    /// A GET of `url`.
    package static func get(_ url: String, headers: [String: String] = [:]) throws -> Response {
        var request = URLRequest(url: URL(string: url)!)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return try send(request)
    }
}

private final class ResultBox: @unchecked Sendable {
    // Written once by URLSession's completion handler before the semaphore is signalled and read
    // after the test thread's wait returns: the semaphore orders the two accesses.
    private var data: Data?
    private var response: HTTPURLResponse?
    private var error: (any Error)?

    func set(data: Data?, response: HTTPURLResponse?, error: (any Error)?) {
        self.data = data
        self.response = response
        self.error = error
    }

    func result() throws -> HTTP.Response {
        if let error { throw error }
        guard let response else { throw URLError(.badServerResponse) }
        var headers: [String: String] = [:]
        for (key, value) in response.allHeaderFields {
            if let key = key as? String, let value = value as? String { headers[key.lowercased()] = value }
        }
        return HTTP.Response(status: response.statusCode, headers: headers, body: data ?? Data())
    }
}

/// A temporary directory removed when the value is deinitialised.
package final class TemporaryDirectory: Sendable {
    /// Its absolute path.
    package let path: String

    /// Creates a fresh directory under the system's temporary directory.
    package init(prefix: String = "detour-test") throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        path = url.path
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The data directory holds every event (device ids, revenue, raw bodies of rejected requests) and
/// the key cache: whatever the umask, nothing in it is readable or writable by other users.
@Suite struct DataDirectoryModeTests {
    @Test("serve creates the data directory, segments, dead letters and key cache for its own user only")
    func ownerOnly() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let parent = try TemporaryDirectory()
        let data = parent.path + "/data"
        let environment = ["DATABASE_URL": database.url, "DETOUR_DATA_DIR": data]
        let keys = try PipelineProcess.createApp(id: "modes", name: "Modes", environment: environment)
        let key = try #require(keys["publishable_key"])

        // The usual umask (022): files would be world-readable unless the server asks for less.
        let previous = umask(0o022)
        let server = try PipelineProcess(["serve", "--http-addr", "127.0.0.1:0"], environment: environment)
        umask(previous)
        defer { server.signal(SIGTERM); _ = server.waitForExit(timeout: .seconds(20)) }
        let base = try #require(server.waitForLine(startingWith: "listening on "), "\(server.standardError)")
        let good = """
            {"event_name":"app_open","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios",\
            "device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}
            """
        #expect(try post(base, key: key, body: good) == 200)
        #expect(try post(base, key: key, body: #"{"event_name":"app_open","timestamp":"bad"}"#) == 400)

        var paths: [String] = [data]
        let walker = try #require(FileManager.default.enumerator(atPath: data))
        for case let relative as String in walker { paths.append(data + "/" + relative) }
        #expect(paths.contains { $0.hasSuffix(".seg") && $0.contains("/segments/") })
        #expect(paths.contains { $0.hasSuffix(".seg") && $0.contains("/deadletter/") })
        #expect(paths.contains { $0.hasSuffix("/keys.json") })
        for path in paths {
            var status = stat()
            #expect(lstat(path, &status) == 0)
            #expect(status.st_mode & 0o077 == 0, "\(path) has mode \(String(status.st_mode & 0o777, radix: 8))")
        }
    }

    private func post(_ base: String, key: String, body: String) throws -> Int {
        var request = URLRequest(url: URL(string: base + "/api/analytics/event")!)
        request.httpMethod = "POST"
        request.httpBody = Data(body.utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
        request.setValue("modes", forHTTPHeaderField: "X-App-ID")
        return try HTTP.send(request).status
    }
}

import Foundation
import Locking
import Observability
import Postgres
import TestSupport
import Testing

@testable import Ingest

// Serialized: several tests here fail their key sources on purpose, and one counts the lines
// such failures log.
@Suite("API keys from PostgreSQL, cached in memory and on disk", .serialized)
struct KeyStoreTests {
    /// A one-loop server on an ephemeral port with `keys`, storing accepted events in `sink`.
    static func server(keys: KeyStore, sink: MemorySink) throws -> IngestServer {
        var configuration = IngestConfiguration()
        configuration.port = 0
        configuration.threads = 1
        return try IngestServer(configuration: configuration, keys: keys, sink: sink, deadLetterSink: MemorySink())
    }

    static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "ingest-keys-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func addKey(_ connection: Connection, app: String, kind: String, key: String) throws {
        try connection.execute("insert into apps (id, name) values (\(app), \(app)) on conflict do nothing")
        try connection.execute(
            """
            insert into api_keys (app_id, key_hash, kind, prefix)
            values (\(app), \(apiKeyHash(key)), \(kind), \(String(key.prefix(6))))
            """)
    }

    @Test("SHA-256 matches the standard test vectors")
    func sha256() {
        #expect(apiKeyHash("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(apiKeyHash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            apiKeyHash(String(repeating: "a", count: 1000))
                == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3")
    }

    @Test(
        "the key source never waits forever for a connection: its connections have connect and TCP timeouts, unless the URL sets its own"
    )
    func connectTimeout() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        func parameters(_ source: PostgresKeySource) throws -> [String: String] {
            let connection = try source.connect()
            defer { connection.close() }
            return connection.parameters
        }
        let defaults = try parameters(PostgresKeySource(url: database.url))
        #expect(defaults["connect_timeout"] == "5" && defaults["tcp_user_timeout"] == "5000", "\(defaults)")
        // Keepalives: a server gone while a load waits for its answer (nothing unacknowledged) is
        // noticed in seconds, not the kernel's ~2 hours that held the refresh timer before.
        #expect(
            [
                defaults["keepalives"], defaults["keepalives_idle"], defaults["keepalives_interval"],
                defaults["keepalives_count"],
            ] == ["1", "5", "2", "3"], "\(defaults)")
        let shorter = try parameters(PostgresKeySource(url: database.url, timeoutSeconds: 3))
        #expect(shorter["connect_timeout"] == "3" && shorter["tcp_user_timeout"] == "3000", "\(shorter)")
        let separator = database.url.contains("?") ? "&" : "?"
        let own = try parameters(
            PostgresKeySource(
                url: database.url + separator + "connect_timeout=9&tcp_user_timeout=1&keepalives_idle=60"))
        #expect(own["connect_timeout"] == "9" && own["tcp_user_timeout"] == "1", "\(own)")
        #expect(own["keepalives_idle"] == "60", "\(own)")
    }

    @Test(
        "a key load stuck behind a lock on api_keys gives up at its statement timeout instead of stalling the refresh")
    func loadBehindALockGivesUp() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let holder = try database.connect()
        defer { holder.close() }
        // As a migration would: the table locked in a transaction that does not end.
        try holder.unsafeSQL("BEGIN")
        try holder.unsafeSQL("LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE")
        let outcome = Locked<Result<Int, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let source = PostgresKeySource(url: database.url, timeoutSeconds: 1)
        Thread.detachNewThread {
            outcome.withLock { $0 = Result(catching: { try source.loadKeys().count }) }
            done.signal()
        }
        // A bound for the test alone (the load gives up after ~1 s); without the timeout it waits forever.
        let finished = done.wait(timeout: .now() + 60) == .success
        try holder.unsafeSQL("ROLLBACK")
        try #require(finished, "the load was still waiting on the lock after 60 s")
        let failure = try #require(outcome.withLock { $0 })
        #expect(throws: (any Error).self) { try failure.get() }
        if case .failure(let error) = failure { #expect("\(error)".contains("statement timeout"), "\(error)") }
        #expect(try source.loadKeys().isEmpty)  // the lock released, the same source loads
    }

    @Test("every load that differs from the cache file rewrites it: an empty first load, and a key that changed kind")
    func cacheFollowsEveryLoad() throws {
        let directory = try Self.temporaryDirectory()
        let cacheFile = directory + "/keys.json"
        let key = APIKeyRecord(appID: TestServer.app, kind: .publishable, key: TestServer.publishableKey)
        let source = StaticKeySource([key])
        /// A new process's store started on `source`, and its verdict for the key.
        func verdictAtStart() -> KeyStore.Verdict {
            let store = KeyStore(source: source, cacheFile: cacheFile)
            store.start()
            defer { store.stop() }
            return store.verify(key: TestServer.publishableKey, appID: TestServer.app)
        }
        #expect(verdictAtStart() == .valid(.publishable))
        // The key is revoked while ingest is stopped; the next start loads no keys at all...
        source.set([])
        #expect(verdictAtStart() == .unknown)
        // ...and a start after it, during an outage, must not bring the revoked key back from the file.
        source.setReachable(false)
        #expect(verdictAtStart() == .unknown)
        source.setReachable(true)

        source.set([APIKeyRecord(appID: TestServer.app, kind: .publishable, key: TestServer.publishableKey)])
        #expect(verdictAtStart() == .valid(.publishable))
        source.set([APIKeyRecord(appID: TestServer.app, kind: .secret, key: TestServer.publishableKey)])
        #expect(verdictAtStart() == .valid(.secret))
        source.setReachable(false)
        #expect(verdictAtStart() == .valid(.secret))
    }

    @Test("a cache file not written is written at the next refresh, though the keys did not change; logged once")
    func cacheWriteIsRetried() throws {
        let directory = try Self.temporaryDirectory() + "/not-yet"
        let cacheFile = directory + "/keys.json"
        let store = KeyStore(
            source: StaticKeySource([APIKeyRecord(appID: "app_a", kind: .publishable, key: "pk_retry")]),
            cacheFile: cacheFile)
        let logged = try Logger.capture { lines in
            #expect(store.refresh() && store.refresh() && store.refresh())
            #expect(!FileManager.default.fileExists(atPath: cacheFile))
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            #expect(store.refresh())
            // This store's lines (others may log meanwhile): its file is its own.
            return lines().filter { $0.contains(cacheFile) }
        }
        #expect(try String(contentsOfFile: cacheFile, encoding: .utf8).contains(apiKeyHash("pk_retry")))
        // One error when the writes begin to fail and one notice when one works again, none per try
        // (until 2026-12-05 every refresh logged an error while a full disk lasted).
        #expect(logged.count == 2, "\(logged)")
        #expect(logged.first?.contains("error ingest: keys.cache_write_failed") == true, "\(logged)")
        #expect(logged.last?.contains("notice ingest: keys.cache_write_recovered") == true, "\(logged)")
        #expect(logged.last?.contains("failed.writes=3") == true, "\(logged)")
    }

    @Test("a database never migrated: the key refresh's error says to run migrate, not only what is missing")
    func unmigratedDatabase() throws {
        let database = try TestDatabase.make(migrate: false)
        defer { database.drop() }
        let error = #expect(throws: (any Error).self) { try PostgresKeySource(url: database.url).loadKeys() }
        let text = "\(try #require(error))"
        #expect(text.contains(#"relation "api_keys" does not exist"#), "\(text)")
        #expect(text.contains("run detour-analytics migrate"), "\(text)")
    }

    @Test("keys come from the database; new keys are picked up and revoked keys dropped on refresh")
    func databaseKeys() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let connection = try database.connect()
        defer { connection.close() }
        try Self.addKey(connection, app: "app_a", kind: "publishable", key: "pk_a")
        let directory = try Self.temporaryDirectory()
        let store = KeyStore(source: PostgresKeySource(url: database.url), cacheFile: directory + "/keys.json")
        store.start()
        defer { store.stop() }
        #expect(store.verify(key: "pk_a", appID: "app_a") == .valid(.publishable))
        #expect(store.verify(key: "pk_a", appID: "app_b") == .otherApp)
        #expect(store.verify(key: "sk_a", appID: "app_a") == .unknown)

        try Self.addKey(connection, app: "app_a", kind: "secret", key: "sk_a")
        try connection.execute("update api_keys set revoked_at = now() where key_hash = \(apiKeyHash("pk_a"))")
        #expect(store.refresh())
        #expect(store.verify(key: "sk_a", appID: "app_a") == .valid(.secret))
        #expect(store.verify(key: "pk_a", appID: "app_a") == .unknown)

        let cache = try String(contentsOfFile: directory + "/keys.json", encoding: .utf8)
        #expect(cache.contains(apiKeyHash("sk_a")))
        #expect(!cache.contains("sk_a\""))
    }

    @Test("the key cache is written to a fresh file of mode 0600: a planted link or a leftover temporary is not reused")
    func cacheWriteIgnoresPlantedFiles() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let connection = try database.connect()
        defer { connection.close() }
        try Self.addKey(connection, app: "app_a", kind: "publishable", key: "pk_planted")
        let directory = try Self.temporaryDirectory()
        let victim = directory + "/victim"
        try "untouched\n".write(toFile: victim, atomically: false, encoding: .utf8)
        let cacheFile = directory + "/keys.json"
        try FileManager.default.createSymbolicLink(atPath: cacheFile + ".tmp", withDestinationPath: victim)

        let store = KeyStore(source: PostgresKeySource(url: database.url), cacheFile: cacheFile)
        #expect(store.refresh())
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "untouched\n")
        #expect(try String(contentsOfFile: cacheFile, encoding: .utf8).contains(apiKeyHash("pk_planted")))

        // A temporary left world-readable (by an older version, or a crash) does not lend its mode.
        #expect(
            FileManager.default.createFile(
                atPath: cacheFile + ".tmp", contents: Data(), attributes: [.posixPermissions: 0o644]))
        try Self.addKey(connection, app: "app_a", kind: "secret", key: "sk_planted")
        #expect(store.refresh())
        var status = stat()
        #expect(stat(cacheFile, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o600, "keys.json has mode \(String(status.st_mode & 0o777, radix: 8))")
    }

    @Test("two nodes writing the shared key cache at once each write a whole file, and leave no temporary behind")
    func concurrentCacheWrites() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cacheFile = directory + "/keys.json"
        let contents = [
            Data(repeating: UInt8(ascii: "a"), count: 64 * 1024), Data(repeating: UInt8(ascii: "b"), count: 64 * 1024),
        ]
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { node in
            for _ in 0..<200 {
                do {
                    try AtomicFile.write(contents[node], to: cacheFile)
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        // With one fixed temporary name each could unlink or rename the other's file mid-write.
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { Array($0.prefix(3)) })")
        #expect(contents.contains(try Data(contentsOf: URL(fileURLWithPath: cacheFile))))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["keys.json"])
    }

    @Test("ingest starts and accepts known keys from the disk cache while PostgreSQL is unreachable")
    func cacheSurvivesDatabaseOutage() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let connection = try database.connect()
        try Self.addKey(connection, app: TestServer.app, kind: "publishable", key: TestServer.publishableKey)
        connection.close()
        let directory = try Self.temporaryDirectory()
        let cacheFile = directory + "/keys.json"
        do {
            let first = KeyStore(source: PostgresKeySource(url: database.url), cacheFile: cacheFile)
            first.start()
            first.stop()
        }
        // A new process: the database is unreachable (nothing listens on port 1).
        let unreachable = PostgresKeySource(url: "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
        #expect(throws: (any Error).self) { try unreachable.loadKeys() }
        let keys = KeyStore(source: unreachable, cacheFile: cacheFile, refreshInterval: .seconds(1))
        keys.start()
        defer { keys.stop() }
        #expect(keys.verify(key: TestServer.publishableKey, appID: TestServer.app) == .valid(.publishable))

        let sink = MemorySink()
        let server = try Self.server(keys: keys, sink: sink)
        defer { server.shutdown() }
        let response = try RawHTTPClient(port: server.port).request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: BadInputTests.event)
        #expect(response.status == 200)
        #expect(sink.records.count == 1)
        #expect(!keys.refresh())
        #expect(keys.verify(key: TestServer.publishableKey, appID: TestServer.app) == .valid(.publishable))
    }

    @Test("with no key set ever loaded (PostgreSQL down, no cache) events get 503, not 401, until keys load")
    func noKeysYetIs503() throws {
        let source = StaticKeySource([
            APIKeyRecord(appID: TestServer.app, kind: .publishable, key: TestServer.publishableKey)
        ])
        source.setReachable(false)
        let directory = try Self.temporaryDirectory()
        let keys = KeyStore(source: source, cacheFile: directory + "/keys.json", refreshInterval: .seconds(1))
        keys.start()
        defer { keys.stop() }
        #expect(!keys.isLoaded)
        let sink = MemorySink()
        let server = try Self.server(keys: keys, sink: sink)
        defer { server.shutdown() }
        let client = try RawHTTPClient(port: server.port)
        // A valid key cannot be told from an unknown one yet: 401 would make the SDK drop the event
        // as if its key were wrong; 503 says "not now" (and a client that retries can retry).
        let refused = try client.request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: BadInputTests.event)
        #expect(refused.status == 503)
        #expect(refused.errorCode == "keys_unavailable")
        #expect(refused.header("Retry-After") == "5")
        let ready = try client.request("GET", "/readyz")
        #expect(ready.status == 503)
        #expect(ready.text.contains("keys_unavailable"))
        #expect(sink.records.isEmpty)
        source.setReachable(true)
        var status = 0
        for _ in 0..<600 {  // at most 60 s; the refresh interval is 1 s
            status = try client.request(
                "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: BadInputTests.event
            ).status
            if status == 200 { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(status == 200)
        #expect(try client.request("GET", "/readyz").status == 200)
        #expect(sink.records.count == 1)
    }

    @Test("a key created in PostgreSQL is accepted over HTTP after the next timed refresh")
    func timedRefresh() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let connection = try database.connect()
        defer { connection.close() }
        try connection.execute("insert into apps (id, name) values ('app_late', 'Late')")
        let keys = KeyStore(source: PostgresKeySource(url: database.url), cacheFile: nil, refreshInterval: .seconds(1))
        keys.start()
        defer { keys.stop() }
        let server = try Self.server(keys: keys, sink: MemorySink())
        defer { server.shutdown() }
        let headers = TestServer.sdkHeaders(key: "pk_late", app: "app_late")
        let client = try RawHTTPClient(port: server.port)
        #expect(
            try client.request("POST", "/api/analytics/event", headers: headers, body: BadInputTests.event).status
                == 401)
        try Self.addKey(connection, app: "app_late", kind: "publishable", key: "pk_late")
        var status = 0
        for _ in 0..<600 {  // at most 60 s; the refresh interval is 1 s
            status = try client.request("POST", "/api/analytics/event", headers: headers, body: BadInputTests.event)
                .status
            if status == 200 { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(status == 200)
    }

    @Test("a running server keeps its keys when the source fails and picks up new ones when it is back")
    func refreshFailureKeepsKeys() throws {
        let server = try TestServer()
        let logged = Logger.capture { lines in
            server.keySource.setReachable(false)
            #expect(!server.keys.refresh() && !server.keys.refresh())
            server.keySource.setReachable(true)
            #expect(server.keys.refresh() && server.keys.refresh())
            // This store's lines: its source fails with its own `Unreachable(source:)`, and it recovers
            // after 2 failures with its key count (other tests may log meanwhile).
            let source = server.keySource.number
            let keys = "keys.count=\(server.keySource.count)"
            return lines().filter {
                $0.contains("keys.refresh_failed error=\"Unreachable(source: \(source))\"")
                    || ($0.contains("failed.refreshes=2") && $0.contains(keys))
            }
        }
        // One line when the outage begins and one when it ends (operators see both), none per retry.
        #expect(logged.count == 2 && logged[0].contains("warning ingest: keys.refresh_failed"), "\(logged)")
        #expect(logged.last?.contains("notice ingest: keys.refresh_recovered") == true, "\(logged)")
        server.keySource.setReachable(false)
        #expect(!server.keys.refresh())
        #expect(
            try server.client().request(
                "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: BadInputTests.event
            )
            .status == 200)
        server.keySource.setReachable(true)
        server.keySource.set([APIKeyRecord(appID: "app_new", kind: .publishable, key: "pk_new")])
        #expect(server.keys.refresh())
        let fresh = try server.client().request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(key: "pk_new", app: "app_new"),
            body: BadInputTests.event)
        #expect(fresh.status == 200)
        let old = try server.client().request(
            "POST", "/api/analytics/event", headers: TestServer.sdkHeaders(), body: BadInputTests.event)
        #expect(old.status == 401)
        #expect(old.errorCode == "invalid_key")
    }
}

import Foundation
import Postgres
import TestSupport
import Testing

/// A database of its own for one test, with the compose roles made by deploy/postgres-init.sh under
/// names of their own (roles are cluster-wide: the test's cannot collide with another run's, nor
/// change the password of a real `detour_owner`). `detour_writer` and `detour_analyst` are shared,
/// as the migrations of every test schema grant them.
struct ComposeRoles {
    let database: String
    let owner: String
    let pipeline: String
    private let ownerPassword: String
    private let pipelinePassword: String
    /// DETOUR_TEST_DATABASE_URL (a superuser's URL) and its parts.
    private let base: String
    private let server: URLComponents

    /// Creates the database (empty); `runInitScript` makes the roles.
    static func make() throws -> ComposeRoles {
        guard let base = ProcessInfo.processInfo.environment["DETOUR_TEST_DATABASE_URL"], !base.isEmpty else {
            throw TestDatabaseError.notConfigured
        }
        let server = try #require(
            URLComponents(string: base), "DETOUR_TEST_DATABASE_URL must be a postgresql:// URL for these tests")
        var random = SystemRandomNumberGenerator()
        let suffix = String(random.next() as UInt64, radix: 16)
        let roles = ComposeRoles(
            database: "roles_" + suffix, owner: "detour_owner_" + suffix, pipeline: "detour_pipeline_" + suffix,
            ownerPassword: String(random.next() as UInt64, radix: 16) + String(random.next() as UInt64, radix: 16),
            pipelinePassword: String(random.next() as UInt64, radix: 16) + String(random.next() as UInt64, radix: 16),
            base: base, server: server)
        let admin = try Connection(url: base)
        defer { admin.close() }
        try admin.execute("CREATE DATABASE \(identifier: roles.database)")
        return roles
    }

    /// The URL of this database, or of `other` (another deployment's), for `user`.
    func url(user: String?, password: String?, database other: String? = nil) -> String {
        var components = server
        components.user = user
        components.password = password
        components.path = "/" + (other ?? database)
        return components.string ?? ""
    }

    /// The superuser (the image's POSTGRES_USER).
    var superuserURL: String { url(user: server.user, password: server.password) }
    /// What compose gives `migrate`.
    var ownerURL: String { url(user: owner, password: ownerPassword) }
    /// What compose gives the pipeline.
    var pipelineURL: String { url(user: pipeline, password: pipelinePassword) }
    /// This deployment's two logins, pointed at another database (another deployment's).
    func loginURLs(database other: String) -> [String] {
        [
            url(user: owner, password: ownerPassword, database: other),
            url(user: pipeline, password: pipelinePassword, database: other),
        ]
    }

    /// Runs deploy/postgres-init.sh with the environment the postgres image gives it (POSTGRES_USER,
    /// POSTGRES_DB and the compose file's variables), over TCP instead of the image's socket.
    func runInitScript() throws -> (status: Int32, output: String) {
        let script = Process()
        script.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        script.arguments = ["120", "/bin/sh", RepositoryRoot.path + "/deploy/postgres-init.sh"]
        script.environment = [
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            "PGHOST": server.host ?? "127.0.0.1", "PGPORT": String(server.port ?? 5432),
            "PGPASSWORD": server.password ?? "", "POSTGRES_USER": server.user ?? "postgres",
            "POSTGRES_DB": database,
            "DETOUR_OWNER_ROLE": owner, "DETOUR_OWNER_PASSWORD": ownerPassword,
            "DETOUR_PIPELINE_ROLE": pipeline, "DETOUR_PIPELINE_PASSWORD": pipelinePassword,
        ]
        let output = Pipe()
        script.standardOutput = output
        script.standardError = output
        try script.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        script.waitUntilExit()
        return (script.terminationStatus, text)
    }

    /// Drops the database (closing its connections) and the two login roles; failures are ignored.
    func drop() {
        guard let admin = try? Connection(url: base) else { return }
        defer { admin.close() }
        _ = try? admin.execute("DROP DATABASE IF EXISTS \(identifier: database) WITH (FORCE)")
        _ = try? admin.execute("DROP ROLE IF EXISTS \(identifier: pipeline)")
        _ = try? admin.execute("DROP ROLE IF EXISTS \(identifier: owner)")
    }
}

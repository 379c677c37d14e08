import Foundation
import Postgres

/// `detour-analytics apps create`: registers an app and prints its keys once.
enum AppsCommand: Command {
    static let name = "apps"
    static let summary = "create an app and its publishable and secret keys"
    static let help = """
        Usage: detour-analytics apps create --id ID --name NAME [--json] [--database-url URL]

        Creates the app and two keys: a publishable key for the SDKs (analytics routes only) and a
        secret key for the link service and the report API. Keys are printed once and stored only as
        SHA-256 hashes. Creating an app that exists fails with a clear message.

        Options:
          --id ID              app id, as the SDKs send it in X-App-ID (1-64 chars: letters, digits, - _ .)
          --name NAME          display name
          --json               print {"app_id":..,"publishable_key":..,"secret_key":..}
        \(databaseHelp)
        """

    static func run(_ arguments: inout Arguments, environment: Environment) throws -> Int32 {
        guard arguments.popPositional() == "create" else { throw UsageError(description: "expected: apps create") }
        let id = try arguments.required("--id")
        let name = try arguments.required("--name")
        let json = arguments.flag("--json")
        let url = try arguments.databaseURL(environment)
        try arguments.finish()
        guard isValidAppID(id) else {
            throw UsageError(description: "--id must be 1-64 characters of letters, digits, '-', '_' or '.'")
        }
        let keys = try createApp(url: try requireDatabase(url), id: id, name: name)
        if json {
            let object = ["app_id": id, "publishable_key": keys.publishable, "secret_key": keys.secret]
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            print(String(decoding: data, as: UTF8.self))
        } else {
            print(
                "app:             \(id) (\(name))\npublishable key: \(keys.publishable)\nsecret key:      \(keys.secret)"
            )
            print("Keep the secret key private; it is shown only now.")
        }
        return 0
    }

    static func isValidAppID(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.utf8.allSatisfy {
                $0.isASCIIAlphanumeric || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".")
            }
    }

    /// Inserts the app and its two key hashes in one transaction and returns the plaintext keys.
    static func createApp(url: String, id: String, name: String) throws -> (publishable: String, secret: String) {
        let publishable = "pk_" + randomToken(bytes: 24)
        let secret = "sk_" + randomToken(bytes: 32)
        let connection = try Connection(url: url)
        defer { connection.close() }
        do {
            try connection.withTransaction { connection in
                try connection.execute("INSERT INTO apps (id, name) VALUES (\(id), \(name))")
                for (kind, key) in [("publishable", publishable), ("secret", secret)] {
                    try connection.execute(
                        """
                        INSERT INTO api_keys (app_id, kind, key_hash, prefix)
                        VALUES (\(id), \(kind), encode(sha256(convert_to(\(key), 'UTF8')), 'hex'), \(String(key.prefix(7))))
                        """)
                }
            }
        } catch let error as PostgresError where error.isUniqueViolation {
            throw UsageError(description: "app \(id) already exists")
        }
        return (publishable, secret)
    }

    /// A URL-safe random token from the system's cryptographic generator (getrandom on Linux).
    static func randomToken(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        // 62 symbols; rejection sampling keeps every symbol equally likely.
        var out: [UInt8] = []
        while out.count < bytes * 4 / 3 {
            let byte = UInt8.random(in: 0...255, using: &generator)
            if byte < 248 { out.append(alphabet[Int(byte) % 62]) }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension UInt8 {
    fileprivate var isASCIIAlphanumeric: Bool {
        (48...57).contains(self) || (65...90).contains(self) || (97...122).contains(self)
    }
}

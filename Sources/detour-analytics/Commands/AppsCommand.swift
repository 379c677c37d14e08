import Foundation
import Ingest
import Postgres
import Reports

/// `detour-analytics apps`: registers apps, lists them, and issues and revokes their keys.
enum AppsCommand: Command {
    static let name = "apps"
    static let summary = "create and list apps; issue and revoke their keys"
    static let help = """
        Usage: detour-analytics apps create --id ID --name NAME [--time-zone ZONE] [--json] [--database-url URL]
               detour-analytics apps update --id ID [--name NAME] [--time-zone ZONE] [--install-lookback DUR]
                   [--reengagement-inactivity DUR] [--conversion-window DUR] [--no-rebuild] [--database-url URL]
               detour-analytics apps list [--json] [--database-url URL]
               detour-analytics apps keys create --app ID --kind publishable|secret [--json] [--database-url URL]
               detour-analytics apps keys revoke --app ID (--key KEY | --prefix PREFIX) [--force] [--database-url URL]

        apps create: the app and two keys, a publishable key for the SDKs (analytics routes only)
        and a secret key for the link service and the report API. Creating an app that exists fails
        with a clear message.
        apps update: changes an app's name or report settings (docs/reports.md, "App settings"), then
        rebuilds every rollup from the raw tables so each report follows the new settings, as
        `report rebuild` does (minutes on a large database; --no-rebuild leaves that to you: until then
        the rollups keep the old days and windows). A setting given with the value it has is no
        change: nothing is rebuilt for it.
        apps list: every app with its settings and its keys' kinds, prefixes, creation and revocation
        times (never the keys: only their SHA-256 hashes are stored).
        apps keys create: one more key for an existing app, for rotating a key without downtime:
        issue the new one, move the clients to it, then revoke the old one.
        apps keys revoke: revokes a key, named by the whole key or by the prefix `apps list` shows;
        a prefix that more than one active key of the app shares is refused, and so is the app's
        last active key of its kind unless --force is given (its clients would be refused). Running ingest
        processes stop accepting it within 30 seconds (they reload keys every 10 s) while they can
        reach PostgreSQL; one that cannot keeps the keys it loaded last (or its key cache) until it can.
        Keys are printed once, when created, and stored only as SHA-256 hashes.

        Options:
          --id ID              create: the new app's id, as the SDKs send it in X-App-ID (1-64 chars:
                               letters, digits, - _ .; not . or ..); update: the app to change
          --app ID             keys: the app whose keys to change
          --name NAME          display name
          --time-zone ZONE     the app's reporting time zone, a region name PostgreSQL knows such as
                               Europe/Berlin (default UTC; offsets like UTC+9 are refused: PostgreSQL reads
                               their sign backwards; docs/reports.md: days are calendar days in it)
          --install-lookback DUR, --reengagement-inactivity DUR, --conversion-window DUR
                               update: the app's windows (default 7d each), such as 3d or 36h, from 1s to 366d
          --no-rebuild         update: do not rebuild the rollups
          --kind KIND          publishable or secret
          --key KEY            the whole key to revoke
          --prefix PREFIX      the key's prefix as `apps list` shows it (pk_ or sk_ and 4 characters)
          --json               machine-readable output
        \(databaseHelp)

        Exit status: 0 done, 64 bad usage (also an app id that exists, no such app or key, a prefix shared
        by two keys, a time zone PostgreSQL does not know), 69 database unavailable or failing
        (unreachable, wrong password, a schema not migrated), 1 refused (a key already revoked).
        """

    static func run(_ arguments: inout Arguments, environment: Environment) throws -> Int32 {
        try unavailableOnDatabaseFailure {
            switch arguments.popPositional() {
            case "create": return try create(&arguments, environment: environment)
            case "update": return try update(&arguments, environment: environment)
            case "list": return try list(&arguments, environment: environment)
            case "keys":
                switch arguments.popPositional() {
                case "create": return try createKey(&arguments, environment: environment)
                case "revoke": return try revokeKey(&arguments, environment: environment)
                default: throw UsageError(description: "expected: apps keys create|revoke")
                }
            default: throw UsageError(description: "expected: apps create|update|list|keys")
            }
        }
    }

    private static func create(_ arguments: inout Arguments, environment: Environment) throws -> Int32 {
        let id = try arguments.required("--id")
        let name = try arguments.required("--name")
        let timeZone = try arguments.option("--time-zone")
        let json = arguments.flag("--json")
        let url = try arguments.databaseURL(environment)
        try arguments.finish()
        try checkAppID(id, flag: "--id")
        let keys = try createApp(url: try requireDatabase(url), id: id, name: name, timeZone: timeZone)
        if json {
            try printJSON(["app_id": id, "publishable_key": keys.publishable, "secret_key": keys.secret])
        } else {
            print("app:             \(id) (\(name))")
            print("publishable key: \(keys.publishable)\nsecret key:      \(keys.secret)")
            print("Keep the secret key private; it is shown only now.")
        }
        return 0
    }

    /// The windows `apps update` sets: flag, column, and how `apps list` names them.
    static let windows: [(flag: String, column: String, label: String)] = [
        ("--install-lookback", "install_lookback", "install lookback"),
        ("--reengagement-inactivity", "reengagement_inactivity", "re-engagement inactivity"),
        ("--conversion-window", "conversion_window", "conversion window"),
    ]
    /// The longest window `apps update` sets.
    static let maxWindow: Duration = .seconds(366 * 86400)

    private static func update(_ arguments: inout Arguments, environment: Environment) throws -> Int32 {
        let id = try arguments.required("--id")
        let name = try arguments.option("--name")
        let timeZone = try arguments.option("--time-zone")
        var windowSeconds: [(column: String, label: String, seconds: Int64)] = []
        for window in windows {
            guard let text = try arguments.option(window.flag) else { continue }
            let duration = try parseDuration(text, flag: window.flag)
            guard duration >= .seconds(1), duration <= maxWindow else {
                throw UsageError(description: "\(window.flag) must be from 1s to 366d, got \(text.prefix(40))")
            }
            windowSeconds.append((window.column, window.label, duration.components.seconds))
        }
        let rebuild = !arguments.flag("--no-rebuild")
        let url = try arguments.databaseURL(environment)
        try arguments.finish()
        try checkAppID(id, flag: "--id")
        guard name != nil || timeZone != nil || !windowSeconds.isEmpty else {
            throw UsageError(
                description:
                    "nothing to change: give --name, --time-zone, --install-lookback, --reengagement-inactivity"
                    + " or --conversion-window")
        }
        let connection = try Connection(url: try requireDatabase(url))
        defer { connection.close() }
        if let timeZone { try checkTimeZone(timeZone, connection) }
        // The settings and the rebuild commit together. Until 2026-12-05 the settings were committed
        // first: a rebuild cut short (SIGKILL, an OOM kill, a lost connection, an error) left the
        // new settings beside rollups made with the old ones, and the same command run again said
        // "unchanged" and rebuilt nothing, so reports kept the old days without a word.
        let changes: [String]
        let settingsChanged: Bool
        // Other apps whose time zone PostgreSQL does not know (sql/079): a rebuild recomputes every
        // app and fails on them, so it is not tried. Tried inside the transaction (until
        // 2026-12-05, one attempt only), two apps left with the same legacy zone could never be
        // moved: each update's rebuild failed on the other, and rolled its own change back.
        var unknownZones: [(app: String, zone: String)] = []
        do {
            (changes, settingsChanged) = try connection.withTransaction { connection in
                let applied = try applyUpdate(
                    id: id, name: name, timeZone: timeZone, windowSeconds: windowSeconds, connection)
                guard applied.settingsChanged, rebuild else { return applied }
                unknownZones = try connection.query("SELECT app_id, time_zone FROM rollup_unknown_zone_apps()").map {
                    (try $0["app_id", as: String.self], try $0["time_zone", as: String.self])
                }
                if unknownZones.isEmpty { try ReportService(connection: connection).rebuild() }
                return applied
            }
        } catch let error as ReportError {
            complain(
                "error: rebuilding the rollups failed, so nothing was changed (run the command again): "
                    + "\(error.description)\n")
            return error.exitCode
        }
        guard !changes.isEmpty else {
            print("app \(id): unchanged (it has these settings already); rollups not rebuilt")
            return 0
        }
        print("app \(id): " + changes.joined(separator: ", "))
        guard settingsChanged else { return 0 }
        guard rebuild else {
            print("rollups not rebuilt (--no-rebuild): reports keep the old settings until `report rebuild`")
            return 0
        }
        guard unknownZones.isEmpty else {
            let named = unknownZones.map { "\($0.app) (\"\($0.zone)\")" }.joined(separator: ", ")
            complain(
                "error: the settings are changed, but the rollups were not rebuilt: PostgreSQL does not know the time"
                    + " zone of app \(named), and a rebuild recomputes every app; give it a zone it knows (apps update"
                    + " --id \(unknownZones[0].app) --time-zone ZONE), then run `report rebuild`. Until then reports"
                    + " keep the old settings\n")
            return 78  // EX_CONFIG, as for an unknown zone elsewhere
        }
        print("every rollup rebuilt from the raw tables with the new settings")
        return 0
    }

    /// Sets what differs from the app's row (locked) and says what changed, and whether a report
    /// setting (time zone, window) did. A value the app has already is left alone: until 2026-12-02
    /// it was listed as a change (`conversion window 7 days (was 7 days)`) and every rollup was
    /// rebuilt for it, minutes on a large database.
    private static func applyUpdate(
        id: String, name: String?, timeZone: String?, windowSeconds: [(column: String, label: String, seconds: Int64)],
        _ connection: Connection
    ) throws -> (changes: [String], settingsChanged: Bool) {
        // FOR NO KEY UPDATE: two updates of the app take turns, and the key commands (FOR KEY SHARE)
        // do not wait for this one's rebuild.
        let rows = try connection.query("SELECT name, time_zone FROM apps WHERE id = \(id) FOR NO KEY UPDATE")
        guard let before = rows.first else { throw AppsError.noSuchApp(id) }
        var changes: [String] = []
        if let name, case let was = try before["name", as: String.self], was != name {
            try connection.execute("UPDATE apps SET name = \(name) WHERE id = \(id)")
            changes.append("name \(name) (was \(was))")
        }
        let nameChanges = changes.count
        if let timeZone, case let was = try before["time_zone", as: String.self], was != timeZone {
            try connection.execute("UPDATE apps SET time_zone = \(timeZone) WHERE id = \(id)")
            changes.append("time zone \(timeZone) (was \(was))")
        }
        for window in windowSeconds {
            // Compared as intervals, so 168h is 7 days: one the app has already updates no row.
            let updated = try connection.query(
                """
                WITH new AS (SELECT justify_hours(make_interval(secs => \(window.seconds))) AS value),
                old AS (SELECT \(identifier: window.column) AS value FROM apps WHERE id = \(id))
                UPDATE apps SET \(identifier: window.column) = new.value FROM new, old
                WHERE id = \(id) AND old.value <> new.value
                RETURNING new.value::text AS now, old.value::text AS was
                """)
            guard let row = updated.first else { continue }
            let (now, was) = (try row["now", as: String.self], try row["was", as: String.self])
            changes.append("\(window.label) \(now) (was \(was))")
        }
        return (changes, changes.count > nameChanges)
    }

    private static func list(_ arguments: inout Arguments, environment: Environment) throws -> Int32 {
        let json = arguments.flag("--json")
        let url = try arguments.databaseURL(environment)
        try arguments.finish()
        let apps = try listApps(url: try requireDatabase(url))
        if json {
            try printJSON(apps.map(\.json))
        } else if apps.isEmpty {
            print("no apps yet: detour-analytics apps create --id ID --name NAME")
        } else {
            for app in apps {
                print(
                    "\(app.id) (\(app.name)): time zone \(app.timeZone), install lookback \(app.installLookback),"
                        + " re-engagement inactivity \(app.reengagementInactivity),"
                        + " conversion window \(app.conversionWindow), created \(app.createdAt)")
                for key in app.keys {
                    let state = key.revokedAt.map { "revoked \($0)" } ?? "active"
                    let kind = key.kind.padding(toLength: 12, withPad: " ", startingAt: 0)
                    print("  \(kind) \(key.prefix)  created \(key.createdAt)  \(state)")
                }
            }
        }
        return 0
    }

    static func checkAppID(_ id: String, flag: String) throws {
        guard isValidAppID(id) else {
            throw UsageError(
                description: "\(flag) must be 1-64 characters of letters, digits, '-', '_' or '.' (not . or ..)")
        }
    }

    static func printJSON(_ object: Any) throws {
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        print(String(decoding: data, as: UTF8.self))
    }

    /// 1-64 letters, digits, `-`, `_`, `.`, but not `.` or `..`: an app id names the daily report's
    /// directory (`<out>/<date>/<app>`), and `..` put every day's report of the app in `<out>` itself.
    static func isValidAppID(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count) && id != "." && id != ".."
            && id.utf8.allSatisfy {
                $0.isASCIIAlphanumeric || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".")
            }
    }

    /// The key kinds `api_keys.kind` holds.
    enum KeyKind: String {
        case publishable, secret

        var tokenPrefix: String { self == .publishable ? "pk_" : "sk_" }
        var tokenBytes: Int { self == .publishable ? 24 : 32 }
    }

    /// How much of a key `api_keys.prefix` keeps for display: `pk_`/`sk_` and 4 random characters.
    static let prefixLength = 7

    /// Inserts the app and its two key hashes in one transaction and returns the plaintext keys.
    static func createApp(
        url: String, id: String, name: String, timeZone: String? = nil
    ) throws -> (publishable: String, secret: String) {
        let connection = try Connection(url: url)
        defer { connection.close() }
        if let timeZone { try checkTimeZone(timeZone, connection) }
        do {
            return try connection.withTransaction { connection in
                try connection.execute(
                    "INSERT INTO apps (id, name, time_zone) VALUES (\(id), \(name), \(timeZone ?? "UTC"))")
                let publishable = try insertKey(connection, app: id, kind: .publishable)
                return (publishable, try insertKey(connection, app: id, kind: .secret))
            }
        } catch let error as PostgresError where error.isUniqueViolation {
            throw AppsError.appExists(id)
        }
    }

    /// Refuses a time zone PostgreSQL does not know by that name. A region name only: PostgreSQL also
    /// takes POSIX offsets (`UTC+9`, `+09:00`) and reads their sign west-positive, so "UTC+9" for Tokyo
    /// would give every report UTC-9 days; the schema's check (report_is_time_zone) lets them through.
    private static func checkTimeZone(_ timeZone: String, _ connection: Connection) throws {
        let known = try connection.query(
            "SELECT EXISTS (SELECT 1 FROM pg_timezone_names WHERE name = \(timeZone)) AS k")
        guard try known.first?["k", as: Bool.self] == true else {
            throw AppsError.unknownTimeZone(String(timeZone.prefix(60)))
        }
    }

    /// One app as `apps list` shows it.
    struct Listed {
        struct Key {
            let kind: String
            let prefix: String
            let createdAt: String
            let revokedAt: String?
        }
        let id: String
        let name: String
        let timeZone: String
        let installLookback: String
        let reengagementInactivity: String
        let conversionWindow: String
        let createdAt: String
        var keys: [Key]

        var json: [String: Any] {
            [
                "app_id": id, "name": name, "time_zone": timeZone, "install_lookback": installLookback,
                "reengagement_inactivity": reengagementInactivity, "conversion_window": conversionWindow,
                "created_at": createdAt,
                "keys": keys.map { key -> [String: Any] in
                    [
                        "kind": key.kind, "prefix": key.prefix, "created_at": key.createdAt,
                        "revoked_at": key.revokedAt.map { $0 as Any } ?? NSNull(),
                    ]
                },
            ]
        }
    }

    /// Every app with its keys (active first, then newest first), ordered by id.
    static func listApps(url: String) throws -> [Listed] {
        let connection = try Connection(url: url)
        defer { connection.close() }
        let rows = try connection.query(
            """
            SELECT a.id, a.name, a.time_zone, a.install_lookback::text AS install_lookback,
                   a.reengagement_inactivity::text AS reengagement_inactivity,
                   a.conversion_window::text AS conversion_window,
                   to_char(a.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS app_created,
                   k.kind, k.prefix,
                   to_char(k.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS key_created,
                   to_char(k.revoked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS key_revoked
            FROM apps a LEFT JOIN api_keys k ON k.app_id = a.id
            ORDER BY a.id, k.revoked_at IS NOT NULL, k.created_at DESC, k.kind, k.prefix
            """)
        var apps: [Listed] = []
        for row in rows {
            let id = try row["id", as: String.self]
            if apps.last?.id != id {
                apps.append(
                    Listed(
                        id: id, name: try row["name", as: String.self], timeZone: try row["time_zone", as: String.self],
                        installLookback: try row["install_lookback", as: String.self],
                        reengagementInactivity: try row["reengagement_inactivity", as: String.self],
                        conversionWindow: try row["conversion_window", as: String.self],
                        createdAt: try row["app_created", as: String.self], keys: []))
            }
            if let kind = try row["kind", as: String?.self] {
                apps[apps.count - 1].keys.append(
                    Listed.Key(
                        kind: kind, prefix: try row["prefix", as: String.self],
                        createdAt: try row["key_created", as: String.self],
                        revokedAt: try row["key_revoked", as: String?.self]))
            }
        }
        return apps
    }

}

/// What `apps` refuses, with the message an operator reads and the exit status.
enum AppsError: RefusalError {
    case appExists(String)
    case noSuchApp(String)
    case noSuchKey(app: String)
    case alreadyRevoked(app: String)
    case ambiguousPrefix(app: String, count: Int)
    case unknownTimeZone(String)
    case lastKey(app: String, kind: String)

    /// 64 (EX_USAGE) when the command names an app or key that does not exist or names two keys, as
    /// `report --app` does for an unknown app (until 2026-12-02 these exited 1, the status of a
    /// failure), and for an id `apps create` finds taken or a time zone PostgreSQL does not know
    /// (which until 2026-12-02 printed the command's whole help after their line); 1 for a key
    /// already revoked, which is the database's state, not a mistake in the command.
    var exitStatus: Int32 {
        switch self {
        case .appExists, .noSuchApp, .noSuchKey, .ambiguousPrefix, .unknownTimeZone, .lastKey: 64
        case .alreadyRevoked: 1
        }
    }

    var description: String {
        switch self {
        case .appExists(let app): "app \(app) already exists (apps list shows it)"
        case .noSuchApp(let app): "no app \(app) (apps list shows them)"
        case .noSuchKey(let app): "no key of app \(app) matches (apps list shows their prefixes)"
        case .alreadyRevoked(let app): "the matching key of app \(app) is already revoked"
        case .ambiguousPrefix(let app, let count):
            "\(count) active keys of app \(app) share this prefix: name the key with --key instead"
        case .unknownTimeZone(let zone):
            "--time-zone \(zone) is not a time zone name PostgreSQL knows (pg_timezone_names); use a region name"
                + " such as Asia/Tokyo, not an offset"
        case .lastKey(let app, let kind):
            "this is the only active \(kind) key of app \(app): revoked, "
                + (kind == "publishable"
                    ? "every SDK's events are refused (401, and the SDKs drop them)"
                    : "the link service's clicks and the report API are refused (401)")
                + " within 30 seconds; issue its replacement first (apps keys create --app \(app) --kind \(kind))"
                + " and move the clients to it, or pass --force to revoke it anyway (a leaked key)"
        }
    }
}

extension UInt8 {
    fileprivate var isASCIIAlphanumeric: Bool {
        (48...57).contains(self) || (65...90).contains(self) || (97...122).contains(self)
    }
}

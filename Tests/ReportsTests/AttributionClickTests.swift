import Postgres
import Reports
import Testing

/// reports.md: a device is attributed to link L "when any of its events carries
/// attribution.install_click_id of a click on L made at most the install lookback (7 days) before
/// the device's install". Until 069 only the earliest event's install click counted.
@Suite struct AttributionClickTests {
    /// Attributed installs per path (organic devices under "").
    private func installs(_ connection: Connection) throws -> [String: Int] {
        let rows = try connection.query(
            "SELECT path, sum(installs)::int AS n FROM rollup_installs_daily WHERE app_id = 'a' GROUP BY path")
        var result: [String: Int] = [:]
        for row in rows { result[try row["path", as: String.self]] = try row["n", as: Int.self] }
        return result
    }

    @Test(
        "any install click within the lookback attributes the device, the latest one first, incrementally and rebuilt",
        arguments: [(true, false), (false, false), (true, true)])
    func anyInstallClick(staging: Bool, queued: Bool) throws {
        let database = try Database()
        defer { database.close() }
        let connection = database.connection
        let fixture = Fixture(connection, staging: staging, queued: queued)
        try fixture.app("a")
        func check(_ step: String, _ expected: [String: Int]) throws {
            if queued { try fixture.process() }
            #expect(try installs(connection) == expected, "after \(step)")
            try expectEqualsRebuild(connection, after: step)
        }

        // The reviewer's case: d1's first event carries cX (never loaded), a later one c6, a click
        // on /six 6 h before the install. Loaded together: attributed to /six.
        fixture.click("c6", path: "/six", at: "2026-06-01T04:00:00Z")
        fixture.event("app_open", device: "d1", at: "2026-06-01T10:00:00Z", installClick: "cX", openType: "deferred")
        fixture.event("sign_up", device: "d1", at: "2026-06-01T11:00:00Z", installClick: "c6", openType: "deferred")
        try fixture.load()
        try check("cX then c6", ["/six": 1])

        // d2: both of its clicks arrive after its events. Organic until then; its later event's
        // click (c7, not its first event's) arriving re-derives it.
        fixture.event("app_open", device: "d2", at: "2026-06-02T10:00:00Z", installClick: "c8", openType: "deferred")
        fixture.event("sign_up", device: "d2", at: "2026-06-02T10:30:00Z", installClick: "c7", openType: "deferred")
        try fixture.load()
        try check("d2's clicks unknown", ["/six": 1, "": 1])
        fixture.click("c7", path: "/seven", at: "2026-06-01T10:00:00Z")
        try fixture.load()
        try check("c7 arrives", ["/six": 1, "/seven": 1])
        // c8, made later than c7 and also before the install, arrives: the latest click wins.
        fixture.click("c8", path: "/eight", at: "2026-06-02T09:00:00Z")
        try fixture.load()
        try check("c8 arrives", ["/six": 1, "/eight": 1])

        // d3 is attributed to c6; a later event carrying another, later click within the lookback
        // moves it (a device with a new install click id is re-derived, not kept as it was).
        fixture.event("app_open", device: "d3", at: "2026-06-01T12:00:00Z", installClick: "c6", openType: "deferred")
        try fixture.load()
        try check("d3 on c6", ["/six": 2, "/eight": 1])
        fixture.click("c9", path: "/nine", at: "2026-06-01T11:00:00Z")
        try fixture.load()
        fixture.event("purchase", device: "d3", at: "2026-06-03T12:00:00Z", installClick: "c9", openType: "deferred")
        try fixture.load()
        try check("d3's later event carries c9", ["/six": 1, "/eight": 1, "/nine": 1])

        // A click outside the lookback (8 days before the install) never attributes; an earlier
        // qualifying one does.
        fixture.click("old", path: "/old", at: "2026-05-27T00:00:00Z")
        fixture.event("app_open", device: "d4", at: "2026-06-04T01:00:00Z", installClick: "old", openType: "deferred")
        try fixture.load()
        try check("d4 too old", ["/six": 1, "/eight": 1, "/nine": 1, "": 1])
        fixture.event("sign_up", device: "d4", at: "2026-06-04T02:00:00Z", installClick: "c9", openType: "deferred")
        try fixture.load()
        try check("d4 also carries c9", ["/six": 1, "/eight": 1, "/nine": 2])
    }
}

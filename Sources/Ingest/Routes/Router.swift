/// What a route does.
package enum RouteKind: Sendable, Hashable {
    case event, retention, batch, link, healthz, readyz, metrics
    /// `POST /api/analytics/conversion`: an action with its purchase fields at the top level.
    case conversion
    /// `GET /api/reports/<kind>`: a read-only report (secret key), run on a report worker.
    case report
}

/// One entry of the route table.
package struct Route: Sendable {
    /// HTTP method.
    package var method: String
    /// Exact path.
    package var path: String
    /// What it does.
    package var kind: RouteKind
    /// Label used in metrics and dead letters (`event`, `batch`, ...).
    package var name: String
}

/// The route table: exact path → method → route.
struct Router: Sendable {
    /// Every route ingest serves.
    static let routes: [Route] = ingestRoutes + reportRoutes

    /// The ingest, health and metrics routes.
    static let ingestRoutes: [Route] = [
        Route(method: "POST", path: "/api/analytics/event", kind: .event, name: "event"),
        Route(method: "POST", path: "/api/analytics/retention", kind: .retention, name: "retention"),
        Route(method: "POST", path: "/api/analytics/conversion", kind: .conversion, name: "conversion"),
        Route(method: "POST", path: "/api/analytics/batch", kind: .batch, name: "batch"),
        Route(method: "POST", path: "/api/link/events", kind: .link, name: "link_events"),
        Route(method: "GET", path: "/healthz", kind: .healthz, name: "healthz"),
        Route(method: "GET", path: "/readyz", kind: .readyz, name: "readyz"),
        Route(method: "GET", path: "/metrics", kind: .metrics, name: "metrics"),
    ]

    /// The read-only report routes, `GET /api/reports/<kind>`, labelled `reports_<kind>`.
    static let reportRoutes: [Route] = reportKinds.map {
        Route(method: "GET", path: reportPathPrefix + $0, kind: .report, name: "reports_" + $0)
    }

    /// The reports the API serves, each at `reportPathPrefix + kind`.
    static let reportKinds = ["links", "funnel", "retention", "attribution"]
    /// Where the report routes live.
    static let reportPathPrefix = "/api/reports/"

    enum Match {
        case found(Route)
        case methodNotAllowed(allow: String)
        case notFound
    }

    private let routes: [Route]

    init(routes: [Route] = Router.routes) {
        self.routes = routes
    }

    func match(method: String, path: String) -> Match {
        // A scan of a dozen routes that compares lengths first: cheaper than hashing the path and
        // the method for two dictionary lookups on every request.
        let length = path.utf8.count
        var methods: [String] = []
        for route in routes where route.path.utf8.count == length && route.path == path {
            if route.method == method { return .found(route) }
            methods.append(route.method)
        }
        if methods.isEmpty { return .notFound }
        if method == "HEAD", let route = routes.first(where: { $0.path == path && $0.method == "GET" }) {
            return .found(route)
        }
        return .methodNotAllowed(allow: methods.sorted().joined(separator: ", "))
    }
}

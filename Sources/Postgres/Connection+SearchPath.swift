extension Connection {
    /// `base` with libpq's `options=-csearch_path=<schema>` added, so that its connections use
    /// `schema`: a query parameter of a `postgresql://` or `postgres://` URL, else a keyword of a
    /// `key=value` connection string. `schema` must need no quoting (letters, digits and `_`).
    package static func withSearchPath(_ base: String, schema: String) -> String {
        if base.hasPrefix("postgresql://") || base.hasPrefix("postgres://") {
            return base + (base.contains("?") ? "&" : "?") + "options=-csearch_path%3D" + schema
        }
        return base + " options='-csearch_path=" + schema + "'"
    }
}

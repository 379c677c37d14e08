/// Link attribution the newest SDKs attach to every action; absent members mean null.
package struct Attribution: Sendable, Hashable {
    /// The click this install was matched to.
    package var installClickID: String?
    /// The click that opened the current app session.
    package var openClickID: String?
    /// `organic` | `deferred` | `verified` | `scheme` (other strings are kept as sent).
    package var openType: String?

    /// Creates an attribution; every member defaults to null.
    package init(installClickID: String? = nil, openClickID: String? = nil, openType: String? = nil) {
        self.installClickID = installClickID
        self.openClickID = openClickID
        self.openType = openType
    }
}

/// One decoded query parameter of a link URL, kept in URL order.
package struct QueryParameter: Sendable, Hashable {
    /// The percent-decoded name.
    package var name: String
    /// The percent-decoded value.
    package var value: String

    /// Creates a parameter.
    package init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

package import JSONText

/// Values by name, sorted by name (event names, currencies): the events, retention events and
/// revenue of a per-link row. It reads and compares as the dictionary it stands for, but is two
/// arrays: the names, shared by every row the report decoded with the same name list, and the
/// values. A 30-day per-link report at 1,000 links has ~30k rows with three such maps each, which
/// as dictionaries were hash tables built when decoded and sorted again when written.
///
/// Values decoded from a name list also share that list's JSON keys (`"name":`), encoded once per
/// list rather than per row and map; and the values are a slice, so a decoded per-link row keeps all
/// of its maps' values in one array of counts and one of amounts instead of up to nine arrays.
package struct NamedValues<Value: Equatable & Sendable>: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    /// The names, unique, in ascending order.
    package private(set) var names: [String]
    /// The value of each name, in the names' order (a slice: index it from `values.startIndex`, or
    /// walk it beside `names`).
    package private(set) var values: ArraySlice<Value>
    /// The names as JSON object keys, when the name list came with them (nil after a change of names).
    package private(set) var keys: JSONKeys?

    /// `values[i]` is the value of `names[i]`; the names are unique and ascending; `keys`, when
    /// given, are the names' JSON keys.
    init(sortedNames names: [String], values: ArraySlice<Value>, keys: JSONKeys? = nil) {
        precondition(names.count == values.count, "one value per name")
        precondition(keys == nil || keys?.count == names.count, "one key per name")
        self.names = names
        self.values = values
        self.keys = keys
    }

    /// `values[i]` is the value of `names[i]` (the values in an array of their own).
    init(sortedNames names: [String], values: [Value], keys: JSONKeys? = nil) {
        self.init(sortedNames: names, values: values[...], keys: keys)
    }

    /// The pairs of a dictionary.
    package init(_ dictionary: [String: Value]) {
        let sorted = dictionary.sorted { $0.key < $1.key }
        self.init(sortedNames: sorted.map(\.key), values: sorted.map(\.value))
    }

    package init(dictionaryLiteral elements: (String, Value)...) {
        guard !elements.isEmpty else {
            // `[:]`, every row's and platform slice's default (nine per per-link row): no dictionary.
            self.init(sortedNames: [], values: [])
            return
        }
        self.init(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }

    /// The value of `name`, nil when absent; setting nil removes it.
    package subscript(name: String) -> Value? {
        get {
            let index = position(of: name)
            return index < names.count && names[index] == name ? values[values.startIndex + index] : nil
        }
        set {
            let index = position(of: name)
            let present = index < names.count && names[index] == name
            switch (present, newValue) {
            case (true, let value?): values[values.startIndex + index] = value
            case (true, nil):
                keys = nil
                names.remove(at: index)
                values.remove(at: values.startIndex + index)
            case (false, let value?):
                keys = nil
                names.insert(name, at: index)
                values.insert(value, at: values.startIndex + index)
            case (false, nil): break
            }
        }
    }

    /// The first position whose name is not below `name` (binary search).
    private func position(of name: String) -> Int {
        var low = 0, high = names.count
        while low < high {
            let middle = (low + high) / 2
            if names[middle] < name { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// True when there are no names.
    package var isEmpty: Bool { names.isEmpty }

    /// How many names.
    package var count: Int { names.count }

    /// Equal names and values (the keys are the names' encoding).
    package static func == (left: NamedValues, right: NamedValues) -> Bool {
        left.names == right.names && left.values == right.values
    }

    /// The same pairs as a dictionary.
    package var dictionary: [String: Value] { Dictionary(uniqueKeysWithValues: zip(names, values)) }
}

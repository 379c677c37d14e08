/// A YAML node: what `YAMLReader` makes of a document.
package enum YAML: Sendable {
    /// A scalar's text; `isQuoted` tells `'1.0'` (a string) from `1.0` (a plain scalar).
    case scalar(String, isQuoted: Bool)
    /// Items in document order.
    case sequence([YAML])
    /// Keys in document order.
    case mapping([(key: String, value: YAML)])

    /// The value of `key` in a mapping; nil for a missing key or anything else.
    package subscript(key: String) -> YAML? {
        guard case .mapping(let pairs) = self else { return nil }
        return pairs.first { $0.key == key }?.value
    }

    /// The pairs of a mapping; empty for anything else.
    package var pairs: [(key: String, value: YAML)] {
        if case .mapping(let pairs) = self { pairs } else { [] }
    }

    /// The items of a sequence; empty for anything else.
    package var items: [YAML] {
        if case .sequence(let items) = self { items } else { [] }
    }

    /// The text of a scalar.
    package var text: String? {
        if case .scalar(let text, _) = self { text } else { nil }
    }
}

/// Reads the subset of YAML that `docs/openapi.yaml` uses: block mappings and sequences (a
/// sequence item may open a mapping on its dash line), flow sequences of scalars (`[a, 'b']`),
/// plain, single- and double-quoted scalars, `|` literal blocks, and `#` comment lines. Anything
/// else (anchors, tags, flow mappings, folded blocks, tabs) is an error rather than a guess, so
/// the tests built on the tree cannot read a construct they do not understand.
package struct YAMLReader {
    /// A construct the reader does not read, with its line.
    package struct Failure: Error, CustomStringConvertible {
        /// What and where.
        package var description: String
    }

    private struct Line {
        var number: Int
        var indent: Int
        var content: String
    }

    private var lines: [Line] = []
    private var position = 0
    /// Raw lines, for `|` blocks (which keep blank lines and `#` as text).
    private let raw: [Substring]

    /// Reads one document.
    ///
    /// - Throws: `Failure` naming the first line the reader does not understand.
    package static func read(_ text: String) throws -> YAML {
        var reader = YAMLReader(text: text)
        guard !reader.lines.isEmpty else { return .mapping([]) }
        let node = try reader.block(indent: reader.lines[0].indent)
        if reader.position < reader.lines.count {
            throw reader.failure("unexpected indentation", reader.lines[reader.position])
        }
        return node
    }

    private init(text: String) {
        raw = text.split(separator: "\n", omittingEmptySubsequences: false)
        for (index, line) in raw.enumerated() {
            let indent = line.prefix(while: { $0 == " " }).count
            let content = line.dropFirst(indent).trimmingTrailingSpaces()
            if content.isEmpty || content.hasPrefix("#") { continue }
            lines.append(Line(number: index + 1, indent: indent, content: String(content)))
        }
    }

    private func failure(_ message: String, _ line: Line) -> Failure {
        Failure(description: "docs/openapi.yaml line \(line.number): \(message): \(line.content)")
    }

    /// The block that starts at the current line, whose lines sit at `indent`.
    private mutating func block(indent: Int) throws -> YAML {
        let first = lines[position]
        if first.content.contains("\t") { throw failure("tabs are not supported", first) }
        return first.content == "-" || first.content.hasPrefix("- ")
            ? try sequence(indent: indent) : try mapping(indent: indent)
    }

    private mutating func sequence(indent: Int) throws -> YAML {
        var items: [YAML] = []
        while position < lines.count, lines[position].indent == indent {
            let line = lines[position]
            guard line.content == "-" || line.content.hasPrefix("- ") else { break }
            let rest = line.content.dropFirst(2).drop(while: { $0 == " " })
            if rest.isEmpty {
                position += 1
                guard position < lines.count, lines[position].indent > indent else {
                    throw failure("empty sequence item", line)
                }
                items.append(try block(indent: lines[position].indent))
            } else if try Self.keySplit(rest, line: line, reader: self) != nil {
                // `- key: value` opens a mapping whose keys sit where `key` does.
                let inner = indent + (line.content.count - rest.count)
                lines[position] = Line(number: line.number, indent: inner, content: String(rest))
                items.append(try mapping(indent: inner))
            } else {
                position += 1
                items.append(try scalarOrFlow(rest, line: line))
            }
        }
        return .sequence(items)
    }

    private mutating func mapping(indent: Int) throws -> YAML {
        var pairs: [(key: String, value: YAML)] = []
        while position < lines.count, lines[position].indent == indent {
            let line = lines[position]
            if line.content.hasPrefix("- ") || line.content == "-" { break }
            guard let (key, value) = try Self.keySplit(line.content[...], line: line, reader: self) else {
                throw failure("expected `key: value`", line)
            }
            if pairs.contains(where: { $0.key == key }) { throw failure("duplicate key \(key)", line) }
            position += 1
            pairs.append((key, try self.value(value, line: line, indent: indent)))
        }
        if position < lines.count, lines[position].indent > indent {
            throw failure("unexpected indentation", lines[position])
        }
        return .mapping(pairs)
    }

    /// The value after `key:`: inline, a nested block, a sequence at the key's own indent, or a `|` block.
    private mutating func value(_ text: Substring, line: Line, indent: Int) throws -> YAML {
        if text == "|" || text == "|-" { return literalBlock(after: line, indent: indent, keepsNewline: text == "|") }
        if !text.isEmpty { return try scalarOrFlow(text, line: line) }
        guard position < lines.count else { return .scalar("", isQuoted: false) }
        let next = lines[position]
        if next.indent > indent { return try block(indent: next.indent) }
        if next.indent == indent, next.content.hasPrefix("- ") { return try sequence(indent: indent) }
        return .scalar("", isQuoted: false)
    }

    /// A `|` block: the raw lines indented deeper than the key, less the first line's indent.
    private mutating func literalBlock(after line: Line, indent: Int, keepsNewline: Bool) -> YAML {
        while position < lines.count, lines[position].indent > indent { position += 1 }
        let end = position < lines.count ? lines[position].number - 1 : raw.count
        var body = raw[line.number..<end].map { String($0) }
        while body.last?.allSatisfy({ $0 == " " }) == true { body.removeLast() }
        let blockIndent = body.first.map { $0.prefix(while: { $0 == " " }).count } ?? 0
        let text = body.map { String($0.dropFirst(min(blockIndent, $0.count))) }.joined(separator: "\n")
        return .scalar(text + (keepsNewline && !body.isEmpty ? "\n" : ""), isQuoted: true)
    }

    /// Splits `key: value` or `key:`; nil when the text is not a mapping entry.
    private static func keySplit(
        _ text: Substring, line: Line, reader: YAMLReader
    ) throws -> (String, Substring)? {
        var key: String
        var rest: Substring
        if let quote = text.first, quote == "'" || quote == "\"" {
            let (scalar, after) = try quoted(text, line: line, reader: reader)
            key = scalar
            rest = after
            guard rest.hasPrefix(":") else { return nil }
        } else {
            guard let colon = colonIndex(text) else { return nil }
            key = String(text[..<colon])
            rest = text[colon...]
        }
        rest = rest.dropFirst()
        guard rest.isEmpty || rest.hasPrefix(" ") else { return nil }
        return (key, rest.drop(while: { $0 == " " }))
    }

    /// Where `: ` or a final `:` ends a plain key.
    private static func colonIndex(_ text: Substring) -> Substring.Index? {
        var index = text.startIndex
        while index < text.endIndex {
            if text[index] == ":" {
                let next = text.index(after: index)
                if next == text.endIndex || text[next] == " " { return index }
            }
            index = text.index(after: index)
        }
        return nil
    }

    private func scalarOrFlow(_ text: Substring, line: Line) throws -> YAML {
        if text.hasPrefix("[") {
            guard text.hasSuffix("]") else { throw failure("unterminated flow sequence", line) }
            let inner = text.dropFirst().dropLast()
            if inner.allSatisfy({ $0 == " " }) { return .sequence([]) }
            return .sequence(try Self.flowItems(inner, line: line, reader: self).map { try scalar($0, line: line) })
        }
        return try scalar(text, line: line)
    }

    /// Splits a flow sequence's inside at commas outside quotes.
    private static func flowItems(_ text: Substring, line: Line, reader: YAMLReader) throws -> [Substring] {
        var items: [Substring] = []
        var rest = text.drop(while: { $0 == " " })
        while true {
            var item: Substring
            if let quote = rest.first, quote == "'" || quote == "\"" {
                let (_, after) = try quoted(rest, line: line, reader: reader)
                item = rest[..<after.startIndex]
                rest = after.drop(while: { $0 == " " })
            } else {
                let end = rest.firstIndex(of: ",") ?? rest.endIndex
                item = rest[..<end].trimmingTrailingSpaces()
                rest = rest[end...]
            }
            items.append(item)
            if rest.isEmpty { return items }
            guard rest.hasPrefix(",") else { throw reader.failure("expected `,` in a flow sequence", line) }
            rest = rest.dropFirst().drop(while: { $0 == " " })
        }
    }

    private func scalar(_ text: Substring, line: Line) throws -> YAML {
        if let quote = text.first, quote == "'" || quote == "\"" {
            let (value, after) = try Self.quoted(text, line: line, reader: self)
            guard after.isEmpty || after.hasPrefix(" #") else { throw failure("text after a quoted scalar", line) }
            return .scalar(value, isQuoted: true)
        }
        var plain = text
        if let comment = plain.range(of: " #") { plain = plain[..<comment.lowerBound].trimmingTrailingSpaces() }
        if let first = plain.first, "&*!{}[]>|%@`,".contains(first) {
            throw failure("unsupported YAML construct", line)
        }
        if Self.colonIndex(plain) != nil { throw failure("a plain scalar holds `: `; quote it", line) }
        return .scalar(String(plain), isQuoted: false)
    }

    /// A quoted scalar at the start of `text` and the text after it.
    private static func quoted(
        _ text: Substring, line: Line, reader: YAMLReader
    ) throws -> (String, Substring) {
        let quote = text.first!
        var value = ""
        var index = text.index(after: text.startIndex)
        while index < text.endIndex {
            let character = text[index]
            let next = text.index(after: index)
            if character == quote {
                // `''` inside single quotes is one quote.
                if quote == "'", next < text.endIndex, text[next] == "'" {
                    value.append("'")
                    index = text.index(after: next)
                    continue
                }
                return (value, text[next...])
            }
            if quote == "\"", character == "\\" {
                guard next < text.endIndex, let escaped = ["\"": "\"", "\\": "\\", "n": "\n", "/": "/"][text[next]]
                else { throw reader.failure("unsupported escape", line) }
                value.append(escaped)
                index = text.index(after: next)
                continue
            }
            value.append(character)
            index = next
        }
        throw reader.failure("unterminated quoted scalar", line)
    }
}

extension Substring {
    fileprivate func trimmingTrailingSpaces() -> Substring {
        var text = self
        while text.last == " " { text = text.dropLast() }
        return text
    }
}

extension Envelope {
    /// The envelope as one line of JSON, without a trailing newline.
    package func encoded() -> [UInt8] {
        var buffer: [UInt8] = []
        encode(into: &buffer)
        return buffer
    }

    /// Appends the envelope as one line of JSON (no newline) to a reusable buffer.
    package func encode(into buffer: inout [UInt8]) {
        fatalError("not yet implemented")
    }
}

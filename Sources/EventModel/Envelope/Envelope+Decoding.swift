extension Envelope {
    /// Decodes one envelope line written by `encoded()`; member order does not matter.
    ///
    /// - Throws: `EnvelopeError` naming the first missing or invalid member.
    package init(decoding line: some Collection<UInt8>) throws(EnvelopeError) {
        fatalError("not yet implemented")
    }
}

/// Reads a body that is pulled piece by piece (a report body's `read(into:)`) whole: calls `read`
/// with a buffer of `readSize` bytes until it copies nothing more, and returns what it copied.
package func drain(readSize: Int = 4096, _ read: (UnsafeMutableRawBufferPointer) -> Int) -> [UInt8] {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: readSize, alignment: 16)
    defer { buffer.deallocate() }
    var out: [UInt8] = []
    while case let count = read(buffer), count > 0 { out.append(contentsOf: buffer[..<count]) }
    return out
}

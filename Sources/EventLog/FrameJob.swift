import Observability

/// One group commit on its way through the writer's pipeline: the NDJSON taken from the pending
/// queue, then the frame compressed from it, then the outcome the waiting appenders read.
///
/// Ownership moves with the stages and is handed over under the writer's lock: the pool (free),
/// one compressor thread (`ndjson` in, `frame` out), the committer thread (prefix, write, sync),
/// the pool again. Only the current owner touches the buffers, so the class needs no lock of its own.
final class FrameJob {
    /// NDJSON records, each followed by "\n".
    var ndjson: [UInt8] = []
    /// Number of records in `ndjson`.
    var records = 0
    /// Order in which the batch left the pending queue; frames are committed in ticket order.
    var ticket: UInt64 = 0
    /// The appenders waiting for this frame.
    var batch = CommitBatch(slot: 0)
    /// `prefixSize` bytes reserved for the metadata prefix, then the compressed body.
    var frame: [UInt8] = []
    /// Bytes of compressed body after the prefix.
    var bodyLength = 0
    /// CRC-32 of the body.
    var bodyChecksum: UInt32 = 0
    /// Set when compression or the commit failed; the appenders receive it.
    var error: LogError?

    /// Drops the contents but keeps the buffers' capacity for the next batch, up to `keep` bytes
    /// (twice the writer's `maxBatchBytes`): a rare huge append made them larger, and those are
    /// released so one burst does not pin memory in every job of the pool.
    func recycle(keep: Int) {
        if ndjson.capacity > keep { ndjson = [] } else { ndjson.removeAll(keepingCapacity: true) }
        if frame.count > keep { frame = [] }
        records = 0
        bodyLength = 0
        error = nil
    }
}

/// The appenders that joined one group commit; they wait until `isDone`. Only touched under the lock.
final class CommitBatch {
    /// Which of the writer's "done" condition variables the waiting appenders sleep on.
    let slot: Int
    var isDone = false
    var error: LogError?
    /// Appends that did not wait (`append(ndjson:completion:)`): run by the committer once done.
    /// (Under the writer's lock, like the rest: no run-time exclusivity check per append.)
    @exclusivity(unchecked) var callbacks: [AppendCallback] = []

    init(slot: Int) { self.slot = slot }
}

/// A queued `append(ndjson:completion:)`: when it started (for the append latency histogram) and
/// what to run once its frame is durable or failed.
struct AppendCallback {
    let start: MonotonicInstant
    let completion: @Sendable (LogError?) -> Void
}

/// Compresses jobs into frames (body and checksum; the committer writes the prefix). One per
/// compressor thread: it owns that thread's compression context.
struct FrameEncoder {
    private let compressor: FrameCompressor
    private let prefixSize: Int

    init(codec: Codec, level: Int) throws(LogError) {
        compressor = try FrameCompressor(codec: codec, level: level)
        prefixSize = SegmentFormat.prefixSize(codec)
    }

    /// Fills `job.frame` (prefix space left blank), `bodyLength` and `bodyChecksum`, or `job.error`.
    func encode(_ job: FrameJob) {
        let prefix = prefixSize
        let needed = prefix + compressor.bound(for: job.ndjson.count)
        if job.frame.count < needed {
            // Not zero-filled: the compressor writes the body and the committer the prefix, and
            // nothing past them is read. Zeros touched every page of the bound (about the NDJSON's
            // size), so a job kept that much resident per frame for a body ~6x smaller; untouched
            // pages of a fresh allocation stay unmapped.
            job.frame = [UInt8](unsafeUninitializedCapacity: needed) { _, initialized in initialized = needed }
        }
        let compressor = self.compressor
        let result = job.ndjson.withUnsafeBytes { input in
            job.frame.withUnsafeMutableBytes { output in
                Result { () throws(LogError) -> (length: Int, checksum: UInt32) in
                    let body = UnsafeMutableRawBufferPointer(rebasing: output[prefix..<needed])
                    let length = try compressor.compress(input, into: body)
                    return (length, checksum(UnsafeRawBufferPointer(rebasing: body[0..<length])))
                }
            }
        }
        switch result {
        case .success(let (length, bodyChecksum)):
            job.bodyLength = length
            job.bodyChecksum = bodyChecksum
        case .failure(let error):
            job.error = error
        }
    }
}

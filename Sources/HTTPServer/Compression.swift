import CZlib

/// Inflates a gzip request body incrementally, refusing output past a limit.
/// Owns its `z_stream` (heap-allocated: zlib keeps a pointer back to it, so it must not move).
final class Decompressor {
    enum Failure: Error { case tooLarge, corrupt }

    private let stream: UnsafeMutablePointer<z_stream>
    private let limit: Int
    private(set) var finished = false
    private var initialized = false

    /// - Parameter limit: the most decompressed bytes allowed (`maxBodyBytes`).
    init(limit: Int) {
        self.limit = limit
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        // 16 + MAX_WBITS: expect a gzip wrapper, not raw zlib (RFC 9110 §8.4.1.3).
        initialized = buzzkit_inflateInit2(stream, 16 + MAX_WBITS) == Z_OK
    }

    deinit {
        if initialized { inflateEnd(stream) }
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Inflates `input` and appends the result to `output`; the limit is checked after every
    /// chunk so a small bomb cannot allocate gigabytes first.
    func inflate(_ input: UnsafeRawBufferPointer, into output: inout [UInt8]) throws(Failure) {
        guard initialized else { throw .corrupt }
        guard !input.isEmpty else { return }
        // Bytes after the end of the gzip member are not part of the body we understand.
        guard !finished else { throw .corrupt }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.bindMemory(to: Bytef.self).baseAddress)
        stream.pointee.avail_in = uInt(input.count)
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let (status, produced) = chunk.withUnsafeMutableBufferPointer { out -> (Int32, Int) in
                stream.pointee.next_out = out.baseAddress
                stream.pointee.avail_out = uInt(out.count)
                let status = CZlib.inflate(stream, Z_NO_FLUSH)
                return (status, out.count - Int(stream.pointee.avail_out))
            }
            if output.count + produced > limit { throw .tooLarge }
            output.append(contentsOf: chunk[0..<produced])
            switch status {
            case Z_STREAM_END:
                finished = true
                if stream.pointee.avail_in != 0 { throw .corrupt }
                return
            case Z_OK:
                if stream.pointee.avail_in == 0 && stream.pointee.avail_out != 0 { return }
            case Z_BUF_ERROR:
                // No progress possible: input is exhausted, wait for more.
                return
            default:
                throw .corrupt
            }
        }
    }
}

/// Compresses a whole response body into one gzip member.
enum Compressor {
    /// Returns the gzip encoding of `input`, or nil if zlib refused (the caller sends identity).
    static func gzip(_ input: [UInt8]) -> [UInt8]? {
        // Heap-allocated: zlib keeps a pointer back to the stream and checks it on every call.
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        defer {
            stream.deinitialize(count: 1)
            stream.deallocate()
        }
        // windowBits 16 + 15: gzip wrapper; memLevel 8 is zlib's default.
        guard
            buzzkit_deflateInit2(stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY)
                == Z_OK
        else { return nil }
        defer { deflateEnd(stream) }
        // deflateBound does not count the gzip header/trailer; 18 more bytes cover them.
        let bound = Int(deflateBound(stream, uLong(input.count))) + 18
        var output = [UInt8](repeating: 0, count: bound)
        let status = input.withUnsafeBufferPointer { inBuffer in
            output.withUnsafeMutableBufferPointer { outBuffer in
                stream.pointee.next_in = UnsafeMutablePointer(mutating: inBuffer.baseAddress)
                stream.pointee.avail_in = uInt(inBuffer.count)
                stream.pointee.next_out = outBuffer.baseAddress
                stream.pointee.avail_out = uInt(outBuffer.count)
                return deflate(stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { return nil }
        output.removeLast(Int(stream.pointee.avail_out))
        return output
    }
}

import Crypto

@testable import Adapters
@testable import TransferGateway

#if canImport(Glibc)
    import Glibc
#endif

/// SHA-256 over data that arrives in pieces (tests hash GiB files without holding them).
struct SHA256Stream {
    private let context = Digest.SHA256Context()

    mutating func update(_ bytes: [UInt8]) { context.update(bytes) }
    mutating func finish() -> [UInt8] { context.finish() }

    static func file(_ path: String) throws -> [UInt8] {
        var stream = SHA256Stream()
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, 1 << 20) }
            if n <= 0 { break }
            stream.update(Array(buffer[0..<n]))
        }
        return stream.finish()
    }
}

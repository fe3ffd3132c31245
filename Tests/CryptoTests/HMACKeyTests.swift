import Crypto
import Testing

@Test func preparedKeyGivesRFC4231sMAC() {
    // RFC 4231, test case 2.
    let mac = HMACKey(Array("Jefe".utf8)).authenticate(Array("what do ya want for nothing?".utf8))
    #expect(Digest.hex(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
}

@Test func preparedKeyMatchesTheOneShotMACAtEveryBlockEdge() {
    // Keys shorter than, equal to and longer than a block (hashed first); messages around the
    // lengths where SHA-256's padding spills into another block.
    for keyLength in [0, 1, 32, 63, 64, 65, 131] {
        let key = (0..<keyLength).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        let prepared = HMACKey(key)
        for messageLength in [0, 1, 55, 56, 63, 64, 65, 119, 120, 1000] {
            let message = (0..<messageLength).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ keyLength) }
            #expect(prepared.authenticate(message) == Digest.hmacSHA256(key: key, message), "key \(keyLength), message \(messageLength)")
        }
    }
}

import Crypto
import Testing

/// JOSE signatures (r and s side by side, RFC 7518 §3.4) become the DER that libcrypto verifies.
@Test func derConversionOfJOSESignatures() {
    // High bit set needs a leading zero; leading zero bytes are dropped.
    let r = [UInt8](repeating: 0xFF, count: 32)
    let s = [UInt8](repeating: 0, count: 31) + [0x01]
    let der = PublicKey.derECDSASignature(r: r, s: s)
    #expect(der[0] == 0x30 && der[2] == 0x02 && der[3] == 33 && der[4] == 0x00)
    #expect(Array(der.suffix(3)) == [0x02, 0x01, 0x01])
}

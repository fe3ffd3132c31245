import Crypto

extension Signer {
    /// A presigned query in one pass, for the URL the gateway hands out most: no query of the
    /// caller's, header names all ASCII and none twice, no value with white space to trim.
    /// The canonical request is written into one buffer (on the stack when it is small) with
    /// the canonical query in its place, hashed there, and the query copied from it into
    /// `out` before the signature. No string is made. Returns false, with nothing written, for
    /// any other request: the staged path signs those.
    func appendPlainPresignedQuery(
        to out: inout [UInt8], method: String, path: PathText, host: String? = nil, headers: [(String, String)],
        expires: Int, time: SigningTime
    ) -> Bool {
        let count = headers.count + (host == nil ? 0 : 1)
        guard count > 0, count <= 32 else { return false }
        // The headers, `Host` (when given apart) after them: their order here is only the
        // insertion sort's starting point.
        func header(_ index: Int) -> (String, String) { index < headers.count ? headers[index] : ("Host", host ?? "") }
        return withUnsafeTemporaryAllocation(of: Int.self, capacity: count) { order -> Bool in
            var headerBytes = 0
            for index in 0..<count {
                let (name, value) = header(index)
                guard !name.isEmpty, Self.isASCII(name), !CanonicalRequest.needsTrim(value) else { return false }
                // The name three times (encoded in the query, in its line, in the signed list),
                // a separator and an end each time, and the value.
                headerBytes += name.utf8.count * 5 + value.utf8.count + 6
                // Insertion sort by lower-cased name: a handful of headers.
                var slot = index
                while slot > 0, Self.lowercasedPrecedes(name, header(order[slot - 1]).0) {
                    order[slot] = order[slot - 1]
                    slot -= 1
                }
                order[slot] = index
            }
            for slot in 1..<max(1, count) where !Self.lowercasedPrecedes(header(order[slot - 1]).0, header(order[slot]).0) {
                return false  // the same name twice: its values are joined, in stages
            }
            let pathBytes: Int
            switch path {
            case .text(let text): pathBytes = max(1, text.utf8.count)
            case .inBuffer(let range): pathBytes = max(1, range.count)
            }
            let token = credentials.sessionToken
            let capacity =
                method.utf8.count + pathBytes + credentialPrefix.count + credentialSuffix.count + scopeSuffix.count
                + (token?.utf8.count ?? 0) * 3 + headerBytes + 320
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { buffer -> Bool in
                var text = ByteWriter(buffer)
                text.put(method)
                text.put(0x0A)
                switch path {
                case .text(let path): text.put(path.isEmpty ? "/" : path)
                case .inBuffer(let range) where range.isEmpty: text.put(UInt8(ascii: "/"))
                case .inBuffer(let range): out.withUnsafeBufferPointer { text.put(UnsafeBufferPointer(rebasing: $0[range])) }
                }
                text.put(0x0A)
                // The canonical query, which is also the URL's: the `X-Amz-*` parameters are in
                // canonical order as written.
                let queryStart = text.count
                text.put(credentialPrefix)
                time.withText { text.put(UnsafeRawBufferPointer(rebasing: $0[..<8])) }
                text.put(credentialSuffix)
                time.withText { text.put($0) }
                text.put("&X-Amz-Expires=")
                text.putDecimal(expires)
                if let token {
                    text.put("&X-Amz-Security-Token=")
                    text.putEncoded(token)
                }
                text.put("&X-Amz-SignedHeaders=")
                for slot in 0..<count {
                    if slot > 0 { text.put("%3B") }
                    text.putEncoded(header(order[slot]).0, lowercased: true)
                }
                let queryEnd = text.count
                text.put(0x0A)
                for slot in 0..<count {
                    let (name, value) = header(order[slot])
                    text.putLowercased(name)
                    text.put(UInt8(ascii: ":"))
                    text.put(value)
                    text.put(0x0A)
                }
                text.put(0x0A)
                for slot in 0..<count {
                    if slot > 0 { text.put(UInt8(ascii: ";")) }
                    text.putLowercased(header(order[slot]).0)
                }
                text.put(0x0A)
                text.put(Self.unsignedPayload)
                // The string to sign follows the canonical request in the same buffer.
                let canonicalEnd = text.count
                text.put("AWS4-HMAC-SHA256\n")
                time.withText { text.put($0) }
                text.put(0x0A)
                time.withText { text.put(UnsafeRawBufferPointer(rebasing: $0[..<8])) }
                text.put(scopeSuffix)
                text.put(0x0A)
                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { digest in
                    Digest.sha256(UnsafeRawBufferPointer(start: buffer.baseAddress, count: canonicalEnd), into: digest)
                    text.putHex(UnsafeBufferPointer(digest))
                }
                guard !text.overflowed else { return false }  // counted wrong: signed in stages instead
                out.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[queryStart..<queryEnd]))
                out.append(contentsOf: "&X-Amz-Signature=".utf8)
                preparedKey(time).appendHex(
                    of: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[canonicalEnd..<text.count]), to: &out)
                return true
            }
        }
    }

    /// Whether `name` is all ASCII.
    static func isASCII(_ name: String) -> Bool {
        var name = name
        return name.withUTF8 { bytes in bytes.allSatisfy { $0 < 0x80 } }
    }

    /// Whether ASCII name `a` sorts before `b` once both are lower-cased (byte order).
    static func lowercasedPrecedes(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8) { ByteWriter.lower($0) < ByteWriter.lower($1) }
    }
}

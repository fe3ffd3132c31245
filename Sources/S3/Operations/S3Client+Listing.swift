import Foundation

/// Listings: the objects under a prefix (ListObjectsV2, whole or a page at a time) and the
/// multipart uploads in progress (ListMultipartUploads), each page checked to move on.
extension S3Client {
    /// Keys under `prefix` (ListObjectsV2), following continuation tokens, at most `limit`. Each
    /// page must end past the last (else the listing stops with an error, not a loop).
    public func listObjects(prefix: String, limit: Int = 100_000) async throws -> [ObjectListing] {
        var objects: [ObjectListing] = []
        var token: String?
        repeat {
            var query = [("list-type", "2"), ("max-keys", "1000"), ("prefix", prefix), ListingEncoding.parameter]
            if let token { query.append(("continuation-token", token)) }
            let page = try listing(try parse(try await send("GET", key: nil, query: query)))
            if let last = page.objects.last, !ListingEncoding.advances(last.key, after: objects.last?.key) {
                throw protocolError("ListObjectsV2 answered a page that does not advance")
            }
            objects += page.objects
            let next = page.truncated ? page.token : nil
            token = next != nil && next != token && !page.objects.isEmpty ? next : nil
        } while token != nil && objects.count < limit
        return objects
    }

    /// One page of the keys under `prefix` after `startAfter` (ListObjectsV2), at most `limit`
    /// entries; with `delimiter`, the common prefixes too (counted among the entries, as S3
    /// counts them), the next page starting after the greater of the last key and last prefix.
    /// A page whose end is not past `startAfter` is an error: the next page would repeat it.
    public func listObjectsPage(prefix: String, startAfter: String?, limit: Int, delimiter: String? = nil) async throws -> ListPage {
        var query = [("list-type", "2"), ("max-keys", String(limit)), ("prefix", prefix), ListingEncoding.parameter]
        if let startAfter { query.append(("start-after", startAfter)) }
        if let delimiter { query.append(("delimiter", delimiter)) }
        let tree = try parse(try await send("GET", key: nil, query: query))
        let page = try listing(tree)
        var prefixes: [String] = []
        if delimiter != nil {
            let encoded = ListingEncoding.isEncoded(tree)
            for item in tree.all("CommonPrefixes") {
                guard let raw = item.text("Prefix") else { continue }
                guard let decoded = ListingEncoding.decode(raw, encoded: encoded) else {
                    throw protocolError("a listed prefix is not URL-encoded UTF-8")
                }
                prefixes.append(decoded)
            }
        }
        var next: String?
        if page.truncated {
            let lastKey = page.objects.last?.key ?? "", lastPrefix = prefixes.last ?? ""
            next = lastKey.utf8.lexicographicallyPrecedes(lastPrefix.utf8) ? lastPrefix : lastKey
            if next == "" { next = nil }
        }
        if let next, !ListingEncoding.advances(next, after: startAfter) {
            throw protocolError("ListObjectsV2 answered a page that does not advance")
        }
        return ListPage(objects: page.objects, prefixes: prefixes, nextStartAfter: next)
    }

    /// A ListObjectsV2 answer read: its objects (keys URL-decoded when S3 encoded them), whether
    /// it is truncated, and its continuation token.
    private func listing(_ tree: XMLTree) throws -> (objects: [ObjectListing], truncated: Bool, token: String?) {
        let encoded = ListingEncoding.isEncoded(tree)
        var objects: [ObjectListing] = []
        for item in tree.all("Contents") {
            guard let raw = item.text("Key"), let size = Int64(item.text("Size") ?? ""), size >= 0 else { continue }
            guard let key = ListingEncoding.decode(raw, encoded: encoded) else {
                throw protocolError("a listed key is not URL-encoded UTF-8")
            }
            objects.append(
                ObjectListing(
                    key: key, size: size, etag: Self.quoted(item.text("ETag") ?? ""),
                    lastModified: item.text("LastModified") ?? ""))
        }
        return (objects, tree.text("IsTruncated") == "true", tree.text("NextContinuationToken"))
    }

    /// Every unfinished multipart upload under `prefix`, following the markers across pages.
    /// AWS sends both `NextKeyMarker` and `NextUploadIdMarker` on a truncated page; SeaweedFS
    /// sends only the latter (and mis-lists if a key marker is guessed), so each marker is sent
    /// only when the server gave it.
    public func listMultipartUploads(prefix: String? = nil, pageSize: Int = 1000) async throws -> [MultipartUploadListing] {
        var uploads: [MultipartUploadListing] = []
        var seen = Set<String>()
        var keyMarker: String?
        var uploadMarker: String?
        while true {
            var query = [("uploads", ""), ("max-uploads", String(pageSize))]
            if let prefix { query.append(("prefix", prefix)) }
            if let keyMarker, !keyMarker.isEmpty { query.append(("key-marker", keyMarker)) }
            if let uploadMarker, !uploadMarker.isEmpty { query.append(("upload-id-marker", uploadMarker)) }
            let tree = try parse(try await send("GET", key: nil, query: query))
            var fresh = 0
            for upload in tree.all("Upload") {
                guard let key = upload.text("Key"), let id = upload.text("UploadId"), seen.insert(id).inserted else { continue }
                uploads.append(MultipartUploadListing(key: key, uploadId: id, initiated: upload.text("Initiated") ?? ""))
                fresh += 1
            }
            keyMarker = tree.text("NextKeyMarker")
            uploadMarker = tree.text("NextUploadIdMarker")
            let hasMarker = !(keyMarker ?? "").isEmpty || !(uploadMarker ?? "").isEmpty
            guard tree.text("IsTruncated") == "true", hasMarker, fresh > 0 else { break }
        }
        return uploads
    }
}

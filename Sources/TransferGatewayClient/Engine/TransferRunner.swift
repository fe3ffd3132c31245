import Foundation

/// Runs a record by its method, reconciles a record with the server after a relaunch (the server
/// wins), and undoes the server's side of a cancelled task.
struct TransferRunner: Sendable {
    let context: TransferContext

    func run(_ record: inout TransferRecord, reporter: ProgressReporter) async throws -> TransferResult {
        switch record.method {
        case .uploadJob: return try await UploadJobTransfer(context: context, reporter: reporter).run(&record)
        case .clientUpload: return try await ClientUploadTransfer(context: context, reporter: reporter).run(&record)
        case .download: return try await DownloadTransfer(context: context, reporter: reporter).run(&record)
        }
    }

    /// What the server says of a record found in the state directory.
    enum Reconciled: Sendable {
        /// Still to do (perhaps updated).
        case unfinished(TransferRecord)
        /// The server finished it while the app was away.
        case finished
        /// The server ended it, or forgot it: there is nothing to go on from.
        case ended(TransferError)
    }

    /// Asks the server where a record stands. A server that cannot be reached leaves it as it is.
    func reconcile(_ record: TransferRecord) async -> Reconciled {
        guard let id = record.serverID else { return .unfinished(record) }
        do {
            switch record.method {
            case .uploadJob:
                let job = try await context.api.job(id)
                switch job.state {
                case "completed": return .finished
                case "failed", "canceled":
                    return .ended(TransferError(.serverFailed, "the upload job \(job.state)", serverCode: job.error?.code))
                default: return .unfinished(record)
                }
            case .clientUpload:
                let upload = try await context.api.upload(id)
                return upload.state == "completed" ? .finished : .unfinished(record)
            case .download:
                // A download job that expired is made again on resume (pinned to the same ETag).
                return .unfinished(record)
            }
        } catch let error as TransferError where error.code == .notFound {
            return .ended(TransferError(.notFound, "the gateway no longer knows this transfer (\(error.message))"))
        } catch {
            return .unfinished(record)
        }
    }

    /// The server's side of a cancelled task: the upload job cancelled, the client upload aborted;
    /// a download's partial file removed.
    func abandon(_ record: TransferRecord) async {
        switch record.method {
        case .uploadJob: if let id = record.serverID { await context.api.cancelJob(id) }
        case .clientUpload: if let id = record.serverID { await context.api.abortUpload(id) }
        case .download: try? FileManager.default.removeItem(at: record.partialURL)
        }
    }

    /// Removes the record and the bytes the state directory held for it.
    func forget(_ record: TransferRecord) {
        context.store.remove(record.id)
        if record.ownsFile { try? FileManager.default.removeItem(at: record.fileURL) }
    }
}

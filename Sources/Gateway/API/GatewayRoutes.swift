import HTTPServer

/// Every route of the API over one `RouteContext`: the composition root fills its ports with
/// the real adapters (PostgreSQL, S3, the disk), the route tests with the in-memory twins. The
/// routes know nothing of SQL, signing or HTTP clients.
public struct GatewayRoutes: Sendable {
    /// What every route shares.
    public let context: RouteContext
    /// What `/readyz` asks.
    public let checks: [any DependencyCheck]
    /// What `/openapi.yaml` serves (absent: 404).
    public let openAPI: [UInt8]?

    public init(context: RouteContext, checks: [any DependencyCheck], openAPI: [UInt8]?) {
        self.context = context
        self.checks = checks
        self.openAPI = openAPI
    }

    /// Every route, registered.
    public func router() -> Router<GatewayRoute> {
        var router = Router<GatewayRoute>()
        OperationsRoutes(context: context, readiness: Readiness(checks: checks, timeout: 2), openAPI: openAPI).register(in: &router)
        PresignRoutes(context: context).register(in: &router)
        guard let jobs = context.jobs else { return router }
        let limits = context.limits
        context.metrics.registerGauge(name: "gateway_waits_open", help: "Long polls and event streams held now.") { limits.waits.total }
        context.metrics.registerGauge(name: "gateway_data_streams_open", help: "Streams of job data held now.") { limits.streams.total }
        JobRoutes(context: context, jobs: jobs).register(in: &router)
        ObjectRoutes(context: context, jobs: jobs).register(in: &router)
        UploadsRoutes(context: context, jobs: jobs).register(in: &router)
        TusRoutes(context: context, jobs: jobs).register(in: &router)
        ResumableRoutes(context: context, jobs: jobs).register(in: &router)
        if let feed = jobs.events { EventFeedRoutes(context: context, feed: feed, changes: jobs.changes).register(in: &router) }
        if let instances = context.instances { AdminRoutes(context: context, instances: instances).register(in: &router) }
        return router
    }
}

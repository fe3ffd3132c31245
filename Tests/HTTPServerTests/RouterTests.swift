import Testing

@testable import HTTPServer

@Test func routerMatchesParametersAndPrefersLiterals() {
    var router = Router<String>()
    router.add("GET", "/v1/jobs/{id}", "job")
    router.add("GET", "/v1/jobs/stats", "stats")
    router.add("POST", "/v1/jobs/{id}/pause", "pause")
    guard case .matched(let job) = router.route(method: "GET", path: "/v1/jobs/abc%20d") else { Issue.record("no match"); return }
    #expect(job.handler == "job" && job.parameters["id"] == "abc d" && job.pattern == "/v1/jobs/{id}")
    guard case .matched(let stats) = router.route(method: "GET", path: "/v1/jobs/stats") else { Issue.record("no match"); return }
    #expect(stats.handler == "stats")
    guard case .matched(let head) = router.route(method: "HEAD", path: "/v1/jobs/x") else { Issue.record("HEAD"); return }
    #expect(head.handler == "job")
    guard case .methodNotAllowed(let allowed) = router.route(method: "DELETE", path: "/v1/jobs/x/pause") else {
        Issue.record("405 expected"); return
    }
    #expect(allowed == ["POST"])
    guard case .notFound = router.route(method: "GET", path: "/v1/jobs/x/y/z") else { Issue.record("404 expected"); return }
    guard case .notFound = router.route(method: "GET", path: "/v1/jobs/%zz") else { Issue.record("bad escape"); return }
    guard case .notFound = router.route(method: "GET", path: "/v1/jobs/") else { Issue.record("empty parameter"); return }
}

@Test func queryDecoding() {
    let pairs = PercentDecoding.query("a=1&b=x+y&c=%2F&d&bad=%G1")
    #expect(pairs.map(\.0) == ["a", "b", "c", "d"])
    #expect(pairs.map(\.1) == ["1", "x y", "/", ""])
}

@Test func anExactMatchIsOnlyAPatternWithoutParameters() {
    var router = Router<String>()
    router.add("GET", "/v1/jobs/{id}", "job")
    router.add("GET", "/healthz", "health")
    #expect(router.exactMatch(method: "GET", path: "/healthz")?.handler == "health")
    #expect(router.exactMatch(method: "GET", path: "/healthz")?.pattern == "/healthz")
    #expect(router.exactMatch(method: "HEAD", path: "/healthz") == nil)
    #expect(router.exactMatch(method: "POST", path: "/healthz") == nil)
    #expect(router.exactMatch(method: "GET", path: "/v1/jobs/abc") == nil)
}

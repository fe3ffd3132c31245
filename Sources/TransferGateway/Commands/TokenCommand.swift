import Auth
import Foundation
import Gateway

/// `transfer-gateway token --sub ID [--ttl SECONDS] [--role ROLE]...`: prints a development JWT
/// signed HS256 with `GATEWAY_JWT_SECRET` (and `iss`/`aud` when those are configured).
enum TokenCommand {
    static func run(_ arguments: [String]) {
        var subject: String?
        var ttl = 3600
        var roles: [String] = []
        var index = 0
        while index < arguments.count {
            let flag = arguments[index]
            guard index + 1 < arguments.count else { Command.fail("\(flag) needs a value", code: 64) }
            let value = arguments[index + 1]
            switch flag {
            case "--sub": subject = value
            case "--ttl":
                guard let seconds = Int(value), (1...31_536_000).contains(seconds) else {
                    Command.fail("--ttl must be a number of seconds from 1 to 31536000", code: 64)
                }
                ttl = seconds
            case "--role": roles.append(value)
            default: Command.fail("unknown option \(flag)", code: 64)
            }
            index += 2
        }
        guard let subject else { Command.fail("token needs --sub ID\n\(CommandHelp.usage(of: "token") ?? "")", code: 64) }
        guard Identity.isValidID(subject) else {
            Command.fail("--sub must be 1-128 bytes without '/', '\\', control characters, '.' or '..'", code: 64)
        }
        let configuration = Command.configuration()
        guard let secret = configuration.jwtSecret else { Command.fail("GATEWAY_JWT_SECRET: is required to mint tokens", code: 2) }
        print(
            TokenMinter.hs256(
                secret: Array(secret.utf8), subject: subject, issuedAt: Int(Date().timeIntervalSince1970),
                ttl: ttl, roles: roles, issuer: configuration.jwtIssuer, audience: configuration.jwtAudience))
    }
}

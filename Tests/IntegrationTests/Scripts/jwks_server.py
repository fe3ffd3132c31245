#!/usr/bin/env python3
"""An identity provider stand-in for the live tests: a JSON Web Key Set on loopback whose keys
rotate on request, and tokens signed with its keys in the shapes real providers issue.

Usage: jwks_server.py PORT_FILE
  Binds 127.0.0.1 on a free port and writes the port to PORT_FILE.
  GET  /.well-known/jwks.json   the current set (Cache-Control: max-age=300), or 503 while "down"
  POST /rotate?alg=RS256|ES256[&keep=1]
                                a new key (new kid) replaces the set's keys (joins them with
                                keep=1); answers the kid
  POST /retire?kid=K            kid K leaves the set
  POST /down, POST /up          the set answers 503 / answers again
  GET  /token?shape=cognito-access|cognito-id|auth0|plain&sub=ID[&kid=K][&aud=A][&ttl=S]
                                a token signed with the newest key (or kid K, even one never
                                published when K is not in the set: it signs with a fresh key)
  GET  /fetches                 how many times the set was fetched
"""
import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

lock = threading.Lock()
keys = []          # [(kid, alg, private_key)] newest last
down = False
fetches = 0


def new_key(alg):
    kid = uuid.uuid4().hex[:12]
    if alg == "ES256":
        private = ec.generate_private_key(ec.SECP256R1())
    else:
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return kid, alg, private


def jwk(kid, alg, private):
    algorithm = jwt.algorithms.ECAlgorithm if alg == "ES256" else jwt.algorithms.RSAAlgorithm
    out = json.loads(algorithm.to_jwk(private.public_key()))
    out.update({"kid": kid, "alg": alg, "use": "sig"})
    return out


def token(query):
    shape = query.get("shape", "plain")
    sub = query.get("sub", "alice")
    now = int(time.time())
    ttl = int(query.get("ttl", "600"))
    with lock:
        chosen = next((k for k in keys if k[0] == query.get("kid")), None)
        if chosen is None and "kid" in query:
            chosen = (query["kid"],) + new_key("RS256")[1:]
        if chosen is None:
            chosen = keys[-1]
    kid, alg, private = chosen
    claims = {"iat": now, "exp": now + ttl}
    if shape == "cognito-access":
        # Cognito access tokens: no aud, the app client in client_id, groups in cognito:groups.
        claims.update({"sub": sub, "token_use": "access", "client_id": query.get("aud", "app-client"),
                       "cognito:groups": ["admins"] if query.get("admin") else ["users"], "username": sub})
    elif shape == "cognito-id":
        claims.update({"sub": sub, "token_use": "id", "aud": query.get("aud", "app-client")})
    elif shape == "auth0":
        # Auth0: aud a list, roles under a namespaced claim.
        claims.update({"sub": sub, "aud": [query.get("aud", "https://api.example"), "https://tenant/userinfo"],
                       "https://example.com/roles": ["admin"] if query.get("admin") else []})
    else:
        claims.update({"sub": sub})
        if "aud" in query:
            claims["aud"] = query["aud"]
    if "iss" in query:
        claims["iss"] = query["iss"]
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return jwt.encode(claims, pem, algorithm=alg, headers={"kid": kid})


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body, content_type="application/json", headers=()):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        global fetches
        url = urlparse(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == "/.well-known/jwks.json":
            with lock:
                fetches += 1
                if down:
                    return self.answer(503, '{"error":"down"}')
                body = json.dumps({"keys": [jwk(*k) for k in keys]})
            return self.answer(200, body, headers=[("Cache-Control", "public, max-age=300")])
        if url.path == "/token":
            return self.answer(200, token(query), "text/plain")
        if url.path == "/fetches":
            with lock:
                return self.answer(200, str(fetches), "text/plain")
        self.answer(404, "{}")

    def do_POST(self):
        global down
        url = urlparse(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        with lock:
            if url.path == "/rotate":
                fresh = new_key(query.get("alg", "RS256"))
                keys[:] = (keys if query.get("keep") == "1" else []) + [fresh]
                return self.answer(200, keys[-1][0], "text/plain")
            if url.path == "/retire":
                keys[:] = [k for k in keys if k[0] != query.get("kid")]
                return self.answer(200, "ok", "text/plain")
            if url.path in ("/down", "/up"):
                down = url.path == "/down"
                return self.answer(200, "ok", "text/plain")
        self.answer(404, "{}")


def exit_with_parent():
    """The test process that started us may end without stopping us: follow it out."""
    import os
    parent = os.getppid()
    while True:
        time.sleep(1)
        if os.getppid() != parent:
            os._exit(0)


def main():
    threading.Thread(target=exit_with_parent, daemon=True).start()
    keys.append(new_key("RS256"))
    keys.append(new_key("ES256"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    server.serve_forever()


if __name__ == "__main__":
    main()

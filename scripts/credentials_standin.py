#!/usr/bin/env python3
"""A loopback stand-in for the AWS credential providers the gateway's chain asks, for the
credential rotation tests (Tests/IntegrationTests/CredentialRotationLiveTests.swift and
`scripts/reliability.sh credentials`). Standard library only.

    credentials_standin.py PORT_FILE

Serves on a free 127.0.0.1 port, written to PORT_FILE once listening:
  GET  /ecs/credentials   the container endpoint (ECS/EKS JSON: AccessKeyId, SecretAccessKey,
                          Expiration); the Authorization header must equal STANDIN_AUTH_TOKEN
  POST /                  STS AssumeRoleWithWebIdentity (form body); WebIdentityToken must equal
                          STANDIN_WEB_TOKEN; answers the STS XML document
  PUT  /latest/api/token  IMDSv2: a session token (X-aws-ec2-metadata-token-ttl-seconds required)
  GET  /latest/meta-data/iam/security-credentials/[ROLE]
                          IMDSv2: the role's name, then its credentials (IMDS JSON with Code),
                          each with the X-aws-ec2-metadata-token header
  GET  /stats             {"ecs": n, "sts": n, "imds": n, "refused": n, "down": n} as JSON
  POST /down?seconds=N    answer 503 to every credentials request for N seconds (an outage)

Each answer hands out the next key of STANDIN_KEYS ("AK:SK,AK:SK,..."), round robin, valid for
STANDIN_LIFETIME seconds (default 120). No session token: SeaweedFS takes any token for one of
its own STS tokens and refuses the request.
"""
import json
import os
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KEYS = [tuple(pair.split(":", 1)) for pair in os.environ["STANDIN_KEYS"].split(",") if ":" in pair]
LIFETIME = int(os.environ.get("STANDIN_LIFETIME", "120"))
AUTH_TOKEN = os.environ.get("STANDIN_AUTH_TOKEN", "")
WEB_TOKEN = os.environ.get("STANDIN_WEB_TOKEN", "")

lock = threading.Lock()
state = {"next": 0, "ecs": 0, "sts": 0, "imds": 0, "refused": 0, "down": 0, "down_until": 0.0}
IMDS_TOKEN = "imds-" + os.urandom(8).hex()
IMDS_ROLE = "stand-in-role"
IMDS_PATH = "/latest/meta-data/iam/security-credentials/"


def next_credentials():
    with lock:
        key, secret = KEYS[state["next"] % len(KEYS)]
        state["next"] += 1
    expiration = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + LIFETIME))
    return key, secret, expiration


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body, content_type="application/json"):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def is_down(self):
        with lock:
            if time.time() < state["down_until"]:
                state["down"] += 1
                return True
        return False

    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path
        if path == "/stats":
            with lock:
                stats = {k: state[k] for k in ("ecs", "sts", "imds", "refused", "down")}
            return self.answer(200, json.dumps(stats))
        if path.startswith(IMDS_PATH):
            return self.imds(path[len(IMDS_PATH):])
        if path != "/ecs/credentials":
            return self.answer(404, "{}")
        if self.is_down():
            return self.answer(503, '{"code":"ServiceUnavailable","message":"down for the test"}')
        if self.headers.get("Authorization", "") != AUTH_TOKEN:
            with lock:
                state["refused"] += 1
            return self.answer(401, '{"code":"AccessDenied","message":"bad authorization token"}')
        key, secret, expiration = next_credentials()
        with lock:
            state["ecs"] += 1
        self.answer(200, json.dumps({
            "RoleArn": "arn:aws:iam::000000000000:role/stand-in",
            "AccessKeyId": key, "SecretAccessKey": secret, "Expiration": expiration,
        }))

    def imds(self, role):
        if self.headers.get("X-aws-ec2-metadata-token", "") != IMDS_TOKEN:
            with lock:
                state["refused"] += 1
            return self.answer(401, "", "text/plain")
        if role == "":
            return self.answer(200, IMDS_ROLE + "\n", "text/plain")
        if role != IMDS_ROLE:
            return self.answer(404, "", "text/plain")
        key, secret, expiration = next_credentials()
        with lock:
            state["imds"] += 1
        self.answer(200, json.dumps({
            "Code": "Success", "LastUpdated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "Type": "AWS-HMAC",
            "AccessKeyId": key, "SecretAccessKey": secret, "Expiration": expiration,
        }))

    def do_PUT(self):
        if urllib.parse.urlsplit(self.path).path != "/latest/api/token":
            return self.answer(404, "", "text/plain")
        if not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
            return self.answer(400, "", "text/plain")
        self.answer(200, IMDS_TOKEN, "text/plain")

    def do_POST(self):
        parts = urllib.parse.urlsplit(self.path)
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length).decode()
        if parts.path == "/down":
            seconds = float(urllib.parse.parse_qs(parts.query).get("seconds", ["10"])[0])
            with lock:
                state["down_until"] = time.time() + seconds
            return self.answer(200, "{}")
        if parts.path != "/":
            return self.answer(404, "{}")
        if self.is_down():
            return self.answer(503, "<ErrorResponse><Error><Code>ServiceUnavailable</Code></Error></ErrorResponse>", "text/xml")
        form = urllib.parse.parse_qs(body)
        token = form.get("WebIdentityToken", [""])[0]
        if form.get("Action", [""])[0] != "AssumeRoleWithWebIdentity" or token != WEB_TOKEN or not form.get("RoleArn"):
            with lock:
                state["refused"] += 1
            return self.answer(400, "<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>"
                                    "<Message>refused</Message></Error></ErrorResponse>", "text/xml")
        key, secret, expiration = next_credentials()
        with lock:
            state["sts"] += 1
        self.answer(200, f"""<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <Credentials>
      <AccessKeyId>{key}</AccessKeyId>
      <SecretAccessKey>{secret}</SecretAccessKey>
      <Expiration>{expiration}</Expiration>
    </Credentials>
  </AssumeRoleWithWebIdentityResult>
</AssumeRoleWithWebIdentityResponse>""", "text/xml")


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    server.serve_forever()


if __name__ == "__main__":
    main()

"""Writes the "generated" part of Tests/AuthTests/Fixtures/jwt-fixtures.json: a fresh RSA-2048
and EC P-256 public key and JWTs signed with their (discarded) private keys. Standard library plus
the `openssl` command line only; no PyPI packages. Run from anywhere:

    python3 scripts/make_jwt_fixtures.py

Key pairs are made by `openssl genpkey` in a temporary directory that is deleted on exit, so only
public keys and tokens reach the repository. Every token is verified (openssl for RS256/ES256,
hmac for HS256) before the file is written. The "rfc7515" and "provenance" members of an existing
fixture file are kept as they are; only "generated" is replaced. Each run makes new keys, so every
value under "generated" changes.

Tokens (header {"alg":...,"typ":"JWT"}, compact JSON, exp 4102444800 = 2100-01-01T00:00:00Z):
  rs256               RS256, {"sub":"alice","exp":4102444800}
  es256               ES256, same claims; JOSE signature = r||s, each left-padded to 32 bytes
  rs256Admin          RS256, {"sub":"alice","exp":4102444800,"roles":["admin"]}
  hsWithRSAPublicKey  HS256, same claims as rs256, HMAC-SHA256 keyed with the exact bytes of
                      rsaPublicKeyPEM (the algorithm-confusion attack token; a verifier
                      configured for RS256 must refuse it)
"""
import base64
import hashlib
import hmac
import json
import os
import pathlib
import subprocess
import sys
import tempfile

OPENSSL = "/usr/bin/openssl" if os.path.exists("/usr/bin/openssl") else "openssl"
ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "Tests" / "AuthTests" / "Fixtures" / "jwt-fixtures.json"
EXP = 4102444800  # 2100-01-01T00:00:00Z


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64u_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def compact_json(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode("utf-8")


def openssl(*args: str, data: bytes | None = None) -> bytes:
    result = subprocess.run([OPENSSL, *args], input=data, capture_output=True)
    if result.returncode != 0:
        sys.exit(f"openssl {' '.join(args)} failed:\n{result.stderr.decode(errors='replace')}")
    return result.stdout


# --- minimal DER, for ECDSA signatures -------------------------------------------------------

def _der_read(buf: bytes, pos: int, tag: int) -> tuple[bytes, int]:
    if buf[pos] != tag:
        raise ValueError(f"expected DER tag {tag:#x}, got {buf[pos]:#x}")
    length = buf[pos + 1]
    pos += 2
    if length & 0x80:
        count = length & 0x7F
        length = int.from_bytes(buf[pos:pos + count], "big")
        pos += count
    return buf[pos:pos + length], pos + length


def _der_len(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(raw)]) + raw


def _der_int(value: int) -> bytes:
    raw = value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")
    if raw[0] & 0x80:
        raw = b"\x00" + raw
    return b"\x02" + _der_len(len(raw)) + raw


def ecdsa_der_to_jose(der: bytes, size: int = 32) -> bytes:
    body, end = _der_read(der, 0, 0x30)
    if end != len(der):
        raise ValueError("trailing bytes after ECDSA signature")
    r, pos = _der_read(body, 0, 0x02)
    s, pos = _der_read(body, pos, 0x02)
    if pos != len(body):
        raise ValueError("trailing bytes inside ECDSA signature")
    r_int, s_int = int.from_bytes(r, "big"), int.from_bytes(s, "big")
    return r_int.to_bytes(size, "big") + s_int.to_bytes(size, "big")  # left-padded


def ecdsa_jose_to_der(sig: bytes) -> bytes:
    half = len(sig) // 2
    body = _der_int(int.from_bytes(sig[:half], "big")) + _der_int(int.from_bytes(sig[half:], "big"))
    return b"\x30" + _der_len(len(body)) + body


# --- minting and checking ----------------------------------------------------------------------

def signing_input(alg: str, claims: dict) -> bytes:
    header = {"alg": alg, "typ": "JWT"}
    return f"{b64u(compact_json(header))}.{b64u(compact_json(claims))}".encode("ascii")


def sign_openssl(tmp: pathlib.Path, private_key: pathlib.Path, data: bytes) -> bytes:
    message = tmp / "message.bin"
    message.write_bytes(data)
    return openssl("dgst", "-sha256", "-sign", str(private_key), str(message))


def verify_openssl(tmp: pathlib.Path, public_pem: pathlib.Path, data: bytes, signature: bytes) -> bool:
    message, sig = tmp / "verify.bin", tmp / "verify.sig"
    message.write_bytes(data)
    sig.write_bytes(signature)
    result = subprocess.run(
        [OPENSSL, "dgst", "-sha256", "-verify", str(public_pem), "-signature", str(sig), str(message)],
        capture_output=True,
    )
    return result.returncode == 0 and b"Verified OK" in result.stdout


def check_token(tmp: pathlib.Path, token: str, alg: str, key: pathlib.Path | bytes, claims: dict) -> None:
    head, body, sig = token.split(".")
    assert json.loads(b64u_decode(head)) == {"alg": alg, "typ": "JWT"}, token
    assert json.loads(b64u_decode(body)) == claims, token
    data, signature = f"{head}.{body}".encode("ascii"), b64u_decode(sig)
    if alg == "HS256":
        ok = hmac.compare_digest(hmac.new(key, data, hashlib.sha256).digest(), signature)
    elif alg == "RS256":
        ok = len(signature) == 256 and verify_openssl(tmp, key, data, signature)
    elif alg == "ES256":
        ok = len(signature) == 64 and verify_openssl(tmp, key, data, ecdsa_jose_to_der(signature))
    else:
        ok = False
    if not ok:
        sys.exit(f"self-check failed for {alg} token {token}")


def generate() -> dict:
    claims = {"sub": "alice", "exp": EXP}
    admin_claims = {"sub": "alice", "exp": EXP, "roles": ["admin"]}

    old_umask = os.umask(0o077)
    try:
        with tempfile.TemporaryDirectory(prefix="jwt-fixtures-") as tmp_name:
            tmp = pathlib.Path(tmp_name)
            rsa_key, ec_key = tmp / "rsa.key", tmp / "ec.key"
            rsa_pub, ec_pub = tmp / "rsa.pub.pem", tmp / "ec.pub.pem"

            openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", str(rsa_key))
            openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-pkeyopt", "ec_param_enc:named_curve", "-out", str(ec_key))
            openssl("pkey", "-in", str(rsa_key), "-pubout", "-out", str(rsa_pub))
            openssl("pkey", "-in", str(ec_key), "-pubout", "-out", str(ec_pub))
            rsa_pem_bytes, ec_pem_bytes = rsa_pub.read_bytes(), ec_pub.read_bytes()

            def rs256(c: dict) -> str:
                data = signing_input("RS256", c)
                return f"{data.decode()}.{b64u(sign_openssl(tmp, rsa_key, data))}"

            def es256(c: dict) -> str:
                data = signing_input("ES256", c)
                return f"{data.decode()}.{b64u(ecdsa_der_to_jose(sign_openssl(tmp, ec_key, data)))}"

            def hs256(secret: bytes, c: dict) -> str:
                data = signing_input("HS256", c)
                return f"{data.decode()}.{b64u(hmac.new(secret, data, hashlib.sha256).digest())}"

            out = {
                "rsaPublicKeyPEM": rsa_pem_bytes.decode("ascii"),
                "ecPublicKeyPEM": ec_pem_bytes.decode("ascii"),
                "rs256": rs256(claims),
                "es256": es256(claims),
                "rs256Admin": rs256(admin_claims),
                # Secret = the PEM file's exact bytes (armour lines and the final newline included).
                "hsWithRSAPublicKey": hs256(rsa_pem_bytes, claims),
            }

            # Verify against the public keys only, as the Swift tests will.
            check_token(tmp, out["rs256"], "RS256", rsa_pub, claims)
            check_token(tmp, out["rs256Admin"], "RS256", rsa_pub, admin_claims)
            check_token(tmp, out["es256"], "ES256", ec_pub, claims)
            check_token(tmp, out["hsWithRSAPublicKey"], "HS256", out["rsaPublicKeyPEM"].encode("ascii"), claims)
            # The confusion token must not pass as RS256 with the same key.
            head, body, sig = out["hsWithRSAPublicKey"].split(".")
            if verify_openssl(tmp, rsa_pub, f"{head}.{body}".encode(), b64u_decode(sig)):
                sys.exit("HS/RS confusion token unexpectedly verifies as RS256")
            for path in (rsa_key, ec_key):  # belt and braces; the directory goes anyway
                path.write_bytes(b"\0" * path.stat().st_size)
            return out
    finally:
        os.umask(old_umask)


def main() -> None:
    document = json.loads(FIXTURE.read_text(encoding="utf-8")) if FIXTURE.exists() else {}
    document["generated"] = generate()
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {FIXTURE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

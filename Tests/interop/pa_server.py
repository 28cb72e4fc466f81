#!/usr/bin/env python3
"""A minimal PowerAuth V3.x server (enrollment API /pa/v3/*), written from the upstream documents.

Shapes and statuses follow wultra/powerauth-restful-integration (controllers, models,
PowerAuthExceptionHandler) and the rules of wultra/powerauth-server (counting, look-ahead,
ECIES timestamp and replay checks, temporary keys). Test-only: loopback, state in memory.

    python3 pa_server.py [--port 0] [--versions 3.0,3.1,3.2,3.3] [--max-failures 5]
                         [--dialect android|ios|plain] [--custom-object none|rich] [--vault-biometry]

--dialect writes every response (and the JSON inside ECIES and the JWT payloads) as dialect.py
describes; --custom-object rich puts RICH_CUSTOM_OBJECT into every status response (an enrollment
server's application may put any JSON there: ActivationStatusResponse.customObject is a Map<String,
Object>); --vault-biometry allows possession_biometry on vault/unlock (powerauth-server
powerauth.service.secureVault.enableBiometricAuthentication, off by default).

Prints on its first line `pa_server: listening on http://127.0.0.1:PORT`, on the second the
configuration string (MOBILE_SDK_CONFIG), on the third the test admin token. The test-only
back office (header X-Test-Admin-Token) is under /test-admin/: init, commit, detail, block
({"activationId", "seconds": N} blocks for N seconds only, then the activation is ACTIVE again, as an
operator's unblock would make it), unblock, custom-object ({"activationId", "customObject": {...}}:
that activation's status responses carry it).
"""
import argparse
import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import powerauth as pa  # noqa: E402
import dialect as dia  # noqa: E402

LOOK_AHEAD = 20
ECIES_WINDOW_MS = 60_000  # powerauth-server requestExpirationInMilliseconds
TEMP_KEY_MS = 300_000  # temporary key validity (powerauth-server default)
TOKEN_PAST_MS = 7_200_000  # powerauth.service.token.timestamp.validity
TOKEN_FUTURE_MS = 1_800_000  # powerauth.service.token.timestamp.forward.validity

STATE_CODES = {"CREATED": 1, "PENDING_COMMIT": 2, "ACTIVE": 3, "BLOCKED": 4, "REMOVED": 5}

# What a real enrollment server may send in customObject: strings, integers and fractions, negative
# and large numbers, booleans, null, arrays and nested objects.
RICH_CUSTOM_OBJECT = {
    "userName": "Jana Nov\u00e1kov\u00e1 <jana@example.com> & co",
    "limit": 1500.5, "ratio": 0.125, "exp": 1.5e-7, "count": 42, "negative": -3, "big": 9007199254740993,
    "flags": [True, False, None], "list": [1, 2.5, "three", {"four": [4]}],
    "nested": {"a": {"b": {"c": "d/e=f"}}, "empty": {}, "none": []},
    "isBlocked": False, "note": None,
}


def out(obj):
    """The bytes this server sends for obj in the selected dialect."""
    return dia.dumps(obj, server=True)


class Refusal(Exception):
    def __init__(self, status, code, message):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def auth_error(msg="POWER_AUTH_SIGNATURE_INVALID"):
    return Refusal(401, "ERR_AUTHENTICATION", msg)


class Server:
    def __init__(self, versions, max_failures, custom_object=None, vault_biometry=False):
        self.lock = threading.Lock()
        self.custom_object = custom_object
        self.vault_biometry = vault_biometry
        self.versions = versions
        self.max_failures = max_failures
        self.app_key = os.urandom(16)
        self.app_secret = os.urandom(16)
        self.app_key_b64 = pa.b64e(self.app_key)
        self.app_secret_b64 = pa.b64e(self.app_secret)
        self.master = pa.new_keypair()
        self.master_pub = pa.pub_bytes(self.master.public_key())
        self.config = pa.build_config(self.app_key, self.app_secret, self.master_pub)
        self.admin_token = pa.b64e(os.urandom(18))
        self.activations = {}
        self.temp_keys = {}
        self.tokens = {}
        self.seen = set()  # ECIES replay: (ephemeralPublicKey, nonce)
        self.stats = {"eciesRefused": 0, "signaturesFailed": 0, "keystoreIssued": 0}
        self.versions_seen = set()

    # ---------------------------------------------------------------- helpers
    def activation(self, aid):
        a = self.activations.get(aid)
        if a is None:
            raise Refusal(400, "ERR_ACTIVATION", "POWER_AUTH_ACTIVATION_INVALID")
        return a

    def expire_blocks(self):
        """A temporary block ends on its own: the activation is ACTIVE again with its failures reset."""
        now = pa.now_ms()
        for a in self.activations.values():
            until = a.get("blockedUntil")
            if until is not None and a["state"] == "BLOCKED" and now >= until:
                a["state"], a["failed"], a["blockedUntil"] = "ACTIVE", 0, None

    def keys_of(self, a):
        return pa.derive_keys(pa.master_secret(a["serverPriv"], pa.pub_from_bytes(a["devicePub"])))

    def check_version(self, v, status=400, code="ERR_ENCRYPTION"):
        if v not in self.versions:
            raise Refusal(status, code, "unsupported protocol version %r" % v)

    def ecies_open(self, version, scope, sh1, body, activation=None, header_app_key=None, ad_activation_id=None):
        """Decrypt an EciesEncryptedRequest under the rules of `version`.
        Returns (context, plaintext). Raises Refusal(400, ERR_ENCRYPTION) on anything wrong."""
        def refuse(why):
            self.stats["eciesRefused"] += 1
            return Refusal(400, "ERR_ENCRYPTION", why)

        if not isinstance(body, dict):
            raise refuse("encrypted request is not a JSON object")
        for f in ("ephemeralPublicKey", "encryptedData", "mac"):
            if not isinstance(body.get(f), str):
                raise refuse("missing %s" % f)
        if version != "3.0" and not isinstance(body.get("nonce"), str):
            raise refuse("missing nonce")
        if version in ("3.2", "3.3") and not isinstance(body.get("timestamp"), int):
            raise refuse("missing timestamp")
        if version == "3.3" and not isinstance(body.get("temporaryKeyId"), str):
            raise refuse("missing temporaryKeyId")
        now = pa.now_ms()
        if version in ("3.2", "3.3") and abs(now - body["timestamp"]) > ECIES_WINDOW_MS:
            raise refuse("request timestamp outside the window")
        aid = activation["id"] if activation else None
        if version == "3.3":
            tk = self.temp_keys.get(body["temporaryKeyId"])
            if tk is None or tk["exp"] < now:
                raise refuse("unknown or expired temporary key")
            if tk["appKey"] != self.app_key_b64 or tk["activationId"] != aid:
                raise refuse("temporary key of another scope")
            priv = tk["priv"]
        else:
            priv = activation["serverPriv"] if scope == "activation" else self.master
        replay_id = (body["ephemeralPublicKey"], body.get("nonce"))
        if replay_id in self.seen:
            raise refuse("replayed ephemeral key and nonce")
        sh2b = pa.sh2_base(self.app_secret_b64, self.keys_of(activation)["transport"] if scope == "activation" else None)
        ad = pa.associated_data(version, self.app_key_b64, aid if scope == "activation" else None, body.get("temporaryKeyId"))
        try:
            ctx, pt = pa.EciesContext.server_open(version, priv, body, sh1, sh2b, ad)
        except (pa.EciesError, ValueError, KeyError, TypeError) as e:
            raise refuse("ECIES: %s" % e)
        self.seen.add(replay_id)
        return ctx, pt

    def encryption_header(self, headers, scope):
        h = pa.parse_header(headers.get("X-PowerAuth-Encryption"))
        if h is None or "version" not in h or "application_key" not in h:
            raise Refusal(400, "ERR_ENCRYPTION", "missing or invalid X-PowerAuth-Encryption")
        self.versions_seen.add(h["version"])
        self.check_version(h["version"])
        if h["application_key"] != self.app_key_b64:
            raise Refusal(400, "ERR_ENCRYPTION", "unknown application key")
        if scope == "activation" and not h.get("activation_id"):
            raise Refusal(400, "ERR_ENCRYPTION", "activation_id missing")
        return h

    def verify_signature(self, headers, method, uri_id, body, allowed):
        """PowerAuth signature (Computing-and-Validating-Signatures.md) with powerauth-server's
        counting (SignatureSharedServiceBehavior): a failed possession-only code does not count."""
        h = pa.parse_header(headers.get("X-PowerAuth-Authorization"))
        if h is None:
            raise auth_error("POWER_AUTH_SIGNATURE_INVALID: header")
        for f in ("pa_version", "pa_activation_id", "pa_application_key", "pa_nonce", "pa_signature_type", "pa_signature"):
            if not h.get(f):
                raise auth_error("missing " + f)
        v = h["pa_version"]
        self.versions_seen.add(v)
        self.check_version(v, 401, "ERR_AUTHENTICATION")
        if h["pa_application_key"] != self.app_key_b64:
            raise auth_error("unknown application")
        a = self.activations.get(h["pa_activation_id"])
        if a is None or a["state"] != "ACTIVE":
            raise auth_error("activation not active")
        st = h["pa_signature_type"].lower()
        if st not in pa.FACTOR_SETS:
            raise auth_error("signature type")
        if st not in allowed:
            raise auth_error("signature type not allowed here")
        try:
            if len(pa.b64d(h["pa_nonce"])) != 16:
                raise ValueError
        except ValueError:
            raise auth_error("nonce")
        keys = self.keys_of(a)
        fk = [keys[f] for f in pa.FACTOR_SETS[st]]
        data = pa.normalized_data(method, uri_id, h["pa_nonce"], body, self.app_secret_b64)
        ctr = a["ctrData"]
        for i in range(LOOK_AHEAD):
            if pa.compute_signature(v, data, fk, ctr) == h["pa_signature"]:
                a["ctrData"] = pa.next_ctr(ctr)
                a["counter"] += i + 1
                if st != "possession":
                    a["failed"] = 0
                return a, h
            ctr = pa.next_ctr(ctr)
        self.stats["signaturesFailed"] += 1
        if st != "possession":
            a["failed"] += 1
            if a["failed"] >= a["maxFailed"]:
                a["state"] = "BLOCKED"
        raise auth_error()

    # ---------------------------------------------------------------- endpoints
    def keystore_create(self, req, headers, raw):
        jwt = (req.get("requestObject") or {}).get("jwt") if isinstance(req, dict) else None
        if "3.3" not in self.versions:
            raise Refusal(400, "ERR_TEMPORARY_KEY", "temporary keys need 3.3")
        if not isinstance(jwt, str):
            raise Refusal(400, "ERR_TEMPORARY_KEY", "missing jwt")
        try:
            _, claims, _, _ = pa.jwt_split(jwt)
            if claims.get("applicationKey") != self.app_key_b64 or not isinstance(claims.get("challenge"), str):
                raise ValueError("claims")
            aid = claims.get("activationId")
            a = None
            if aid is not None:
                a = self.activations.get(aid)
                # powerauth-server TemporaryKeyBehavior: ACTIVE or BLOCKED activations only
                if a is None or a["state"] not in ("ACTIVE", "BLOCKED"):
                    raise ValueError("activation")
                key = pa.hs256_key(self.app_secret_b64, self.keys_of(a)["transport"])
            else:
                key = pa.hs256_key(self.app_secret_b64)
            pa.jwt_verify_hs256(jwt, key)
        except (ValueError, KeyError, TypeError) as e:
            raise Refusal(400, "ERR_TEMPORARY_KEY", "invalid request JWT: %s" % e)
        tid = str(uuid.uuid4())
        priv = pa.new_keypair()
        now = pa.now_ms()
        self.stats["keystoreIssued"] += 1
        self.temp_keys[tid] = {"priv": priv, "appKey": self.app_key_b64, "activationId": aid, "exp": now + TEMP_KEY_MS}
        out = {"sub": tid, "applicationKey": self.app_key_b64}
        if aid is not None:
            out["activationId"] = aid
        out.update({"challenge": claims["challenge"], "publicKey": pa.b64e(pa.pub_bytes(priv.public_key())),
                    "iat": now // 1000, "exp": (now + TEMP_KEY_MS) // 1000, "iat_ms": now, "exp_ms": now + TEMP_KEY_MS})
        signer = self.master if aid is None else a["serverPriv"]
        enc = None if dia.current() == "plain" else (lambda c: dia.dumps(c, server=True))
        return 200, {"status": "OK", "responseObject": {"jwt": pa.jwt_es256(out, signer, encode=enc)}}

    def activation_create(self, req, headers, raw):
        h = self.encryption_header(headers, "application")
        v = h["version"]
        ctx1, pt1 = self.ecies_open(v, "application", pa.SH1["activation_layer_1"], req)
        try:
            l1 = json.loads(pt1)
            if l1.get("type") != "CODE":
                raise ValueError("type")
            code = l1["identityAttributes"]["code"]
            l2req = l1["activationData"]
        except (ValueError, KeyError, TypeError) as e:
            raise Refusal(400, "ERR_ACTIVATION", "layer 1: %s" % e)
        a = next((x for x in self.activations.values() if x["code"] == code and x["state"] == "CREATED"), None)
        if a is None:
            raise Refusal(400, "ERR_ACTIVATION", "POWER_AUTH_ACTIVATION_INVALID")
        ctx2, pt2 = self.ecies_open(v, "application", pa.SH1["activation_layer_2"], l2req)
        try:
            l2 = json.loads(pt2)
            dev = pa.b64d(l2["devicePublicKey"])
            pa.pub_from_bytes(dev)
        except (ValueError, KeyError, TypeError) as e:
            raise Refusal(400, "ERR_ACTIVATION", "layer 2: %s" % e)
        a["devicePub"] = dev
        a["name"] = l2.get("activationName")
        a["state"] = "PENDING_COMMIT"
        a["version"] = v
        l2resp = {"activationId": a["id"], "serverPublicKey": pa.b64e(pa.pub_bytes(a["serverPriv"].public_key())),
                  "ctrData": pa.b64e(a["ctrData"])}
        enc2 = ctx2.encrypt_response(out(l2resp))
        l1resp = {"activationData": enc2, "customAttributes": {}}
        return 200, ctx1.encrypt_response(out(l1resp))

    def activation_status(self, req, headers, raw):
        ro = req.get("requestObject") if isinstance(req, dict) else None
        if not isinstance(ro, dict) or not isinstance(ro.get("activationId"), str):
            raise Refusal(400, "ERR_ACTIVATION", "POWER_AUTH_ACTIVATION_INVALID")
        a = self.activations.get(ro["activationId"])
        challenge = ro.get("challenge")
        try:
            ch = pa.b64d(challenge) if challenge is not None else None
            if ch is not None and len(ch) != 16:
                raise ValueError
        except ValueError:
            raise Refusal(400, "ERR_ACTIVATION", "challenge")
        nonce = os.urandom(16) if ch is not None else None
        if a is None:
            # powerauth-server ActivationServiceBehavior: an unknown activation answers OK with
            # 32 random bytes (REMOVED on the server side; the client cannot decrypt it)
            res = {"activationId": ro["activationId"], "encryptedStatusBlob": pa.b64e(os.urandom(32))}
            if nonce is not None:
                res["nonce"] = pa.b64e(nonce)
            res["customObject"] = None
            return 200, {"status": "OK", "responseObject": res}
        if a["state"] == "CREATED":
            blob = os.urandom(32)  # no shared key yet (powerauth-server ActivationServiceBehavior)
        else:
            tk = self.keys_of(a)["transport"]
            blob = pa.encrypt_status_blob(tk, ch, nonce, STATE_CODES[a["state"]], 3, 3, a["counter"], a["failed"],
                                          a["maxFailed"], LOOK_AHEAD, a["ctrData"])
        res = {"activationId": a["id"], "encryptedStatusBlob": pa.b64e(blob)}
        if nonce is not None:
            res["nonce"] = pa.b64e(nonce)
        res["customObject"] = a.get("customObject", self.custom_object)
        return 200, {"status": "OK", "responseObject": res}

    def activation_remove(self, req, headers, raw):
        a, _ = self.verify_signature(headers, "POST", "/pa/activation/remove", raw,
                                     ("possession_knowledge", "possession_biometry", "possession_knowledge_biometry"))
        a["state"] = "REMOVED"
        return 200, {"status": "OK", "responseObject": {"activationId": a["id"]}}

    def signature_validate(self, req, headers, raw):
        self.verify_signature(headers, "POST", "/pa/signature/validate", raw, tuple(
            ["possession", "possession_knowledge", "possession_biometry", "possession_knowledge_biometry"]))
        return 200, {"status": "OK"}

    def token_create(self, req, headers, raw):
        a, h = self.verify_signature(headers, "POST", "/pa/token/create", raw, (
            "possession", "possession_knowledge", "possession_biometry", "possession_knowledge_biometry"))
        try:
            ctx, _ = self.ecies_open(h["pa_version"], "activation", pa.SH1["token_create"], req, activation=a)
        except Refusal as r:
            # TokenService wraps every failure as PowerAuthTokenErrorException: 401 ERR_AUTHENTICATION
            raise Refusal(401, "ERR_AUTHENTICATION", r.message)
        tid = str(uuid.uuid4())
        secret = os.urandom(16)
        # iOS dialect: a secret whose Base64 holds a "/" (written "\/"), so that the escape is always
        # exercised (a random 16-byte secret has one only about half the time); still random
        while dia.current() == "ios" and "/" not in pa.b64e(secret):
            secret = os.urandom(16)
        self.tokens[tid] = {"activationId": a["id"], "secret": secret, "type": h["pa_signature_type"]}
        return 200, ctx.encrypt_response(out({"tokenId": tid, "tokenSecret": pa.b64e(secret)}))

    def token_remove(self, req, headers, raw):
        a, _ = self.verify_signature(headers, "POST", "/pa/token/remove", raw, (
            "possession", "possession_knowledge", "possession_biometry", "possession_knowledge_biometry"))
        ro = req.get("requestObject") if isinstance(req, dict) else None
        if not isinstance(ro, dict) or not isinstance(ro.get("tokenId"), str):
            raise auth_error("invalid request")
        t = self.tokens.get(ro["tokenId"])
        if t is None or t["activationId"] != a["id"]:
            raise auth_error("token")
        del self.tokens[ro["tokenId"]]
        return 200, {"status": "OK", "responseObject": {"tokenId": ro["tokenId"]}}

    def verify_token(self, headers):
        h = pa.parse_header(headers.get("X-PowerAuth-Token"))
        if h is None or not all(h.get(f) for f in ("token_id", "token_digest", "nonce", "timestamp", "version")):
            raise auth_error("POWER_AUTH_TOKEN_INVALID")
        t = self.tokens.get(h["token_id"])
        if t is None:
            raise auth_error("POWER_AUTH_TOKEN_INVALID")
        try:
            ts = int(h["timestamp"])
            nonce = pa.b64d(h["nonce"])
        except ValueError:
            raise auth_error("POWER_AUTH_TOKEN_INVALID")
        now = pa.now_ms()
        if ts < now - TOKEN_PAST_MS or ts > now + TOKEN_FUTURE_MS:
            raise auth_error("POWER_AUTH_TOKEN_INVALID")
        # replay of a MAC token nonce (powerauth-server TokenBehavior, UniqueValueType.MAC_TOKEN)
        if ("token", h["nonce"], h["token_id"]) in self.seen:
            raise auth_error("POWER_AUTH_TOKEN_INVALID")
        import hmac as _h

        want = pa.token_digest(h["version"], t["secret"], nonce, ts)
        self.seen.add(("token", h["nonce"], h["token_id"]))
        if not _h.compare_digest(pa.b64e(want), h["token_digest"]):
            raise auth_error("POWER_AUTH_TOKEN_INVALID")
        a = self.activations.get(t["activationId"])
        if a is None or a["state"] != "ACTIVE":
            raise auth_error("POWER_AUTH_TOKEN_INVALID")
        return a, t

    def activation_detail(self, req, headers, raw):
        """Token-checked call (ActivationController.detail: @PowerAuthToken + activation-scope ECIES)."""
        a, t = self.verify_token(headers)
        if t["type"] not in ("possession_knowledge", "possession_biometry"):
            raise auth_error("POWER_AUTH_TOKEN_INVALID: signature type")
        h = self.encryption_header(headers, "activation")
        if h.get("activation_id") != a["id"]:
            raise Refusal(400, "ERR_ENCRYPTION", "activation mismatch")
        ctx, _ = self.ecies_open(h["version"], "activation", pa.SH1["generic_activation"], req, activation=a)
        # ObjectResponse<ActivationDetailResponse>, encrypted whole by the encryption advice
        return 200, ctx.encrypt_response(out({"status": "OK", "responseObject": {
            "activationId": a["id"], "activationName": a["name"]}}))

    def vault_unlock(self, req, headers, raw):
        # powerauth-server VaultUnlockServiceBehavior: POSSESSION_KNOWLEDGE only (POSSESSION_BIOMETRY when
        # enabled), refused before the code is verified, so nothing is counted; restful-integration
        # SecureVaultService turns the refusal into 400 ERR_SECURE_VAULT.
        hv = pa.parse_header(headers.get("X-PowerAuth-Authorization")) or {}
        allowed = ("possession_knowledge", "possession_biometry") if self.vault_biometry else ("possession_knowledge",)
        if hv.get("pa_signature_type", "").lower() not in allowed:
            raise Refusal(400, "ERR_SECURE_VAULT", "POWER_AUTH_SECURE_VAULT_INVALID: signature type")
        a, h = self.verify_signature(headers, "POST", "/pa/vault/unlock", raw, allowed)
        try:
            ctx, pt = self.ecies_open(h["pa_version"], "activation", pa.SH1["vault_unlock"], req, activation=a)
        except Refusal as r:
            raise Refusal(400, "ERR_SECURE_VAULT", r.message)
        try:
            reason = json.loads(pt).get("reason") if pt else None
        except (ValueError, AttributeError):
            raise Refusal(400, "ERR_SECURE_VAULT", "request")
        keys = self.keys_of(a)
        a["lastVaultReason"] = reason
        a["vaultUnlocks"] = a.get("vaultUnlocks", 0) + 1
        blob = pa.encrypt_vault_key(keys["transport"], keys["vault"])
        return 200, ctx.encrypt_response(out({"encryptedVaultEncryptionKey": pa.b64e(blob)}))

    def user_info(self, req, headers, raw):
        h = self.encryption_header(headers, "activation")
        a = self.activations.get(h.get("activation_id"))
        if a is None or a["state"] != "ACTIVE":
            raise Refusal(400, "ERR_USER_INFO", "activation")
        ctx, _ = self.ecies_open(h["version"], "activation", pa.SH1["generic_activation"], req, activation=a)
        return 200, ctx.encrypt_response(out({"sub": a["userId"]}))

    def server_status(self, req, headers, raw):
        return 200, {"status": "OK", "responseObject": {
            "serverTime": pa.now_ms(), "application": {"name": "pa_server.py", "version": "interop"}}}

    # ---------------------------------------------------------------- test admin
    def admin(self, path, req):
        if isinstance(req, dict) and isinstance(req.get("requestObject"), dict):
            req = req["requestObject"]
        if path == "init":
            code = pa.make_activation_code()
            aid = str(uuid.uuid4())
            self.activations[aid] = {
                "id": aid, "userId": (req or {}).get("userId", "user"), "code": code, "state": "CREATED",
                "serverPriv": pa.new_keypair(), "devicePub": None, "ctrData": os.urandom(16), "counter": 0,
                "failed": 0, "maxFailed": self.max_failures, "name": None,
            }
            sig = pa.b64e(pa.ecdsa_sign_der(self.master, code.encode()))
            return {"activationId": aid, "activationCode": code, "activationSignature": sig, "configuration": self.config}
        a = self.activation((req or {}).get("activationId"))
        if path == "commit":
            if a["state"] != "PENDING_COMMIT":
                raise Refusal(400, "ERR_ACTIVATION", "not pending commit")
            a["state"] = "ACTIVE"
            return {}
        if path == "block":
            a["state"] = "BLOCKED"
            secs = (req or {}).get("seconds")
            a["blockedUntil"] = pa.now_ms() + int(secs * 1000) if secs else None
            return {"blockedUntil": a["blockedUntil"]}
        if path == "unblock":
            if a["state"] == "BLOCKED":
                a["state"], a["failed"], a["blockedUntil"] = "ACTIVE", 0, None
            return {}
        if path == "custom-object":
            a["customObject"] = (req or {}).get("customObject")
            return {}
        if path == "detail":
            return {"activationId": a["id"], "state": a["state"], "failedAttempts": a["failed"],
                    "maxFailedAttempts": a["maxFailed"], "counter": a["counter"], "tokens": sum(
                        1 for t in self.tokens.values() if t["activationId"] == a["id"]),
                    "tokenIds": sorted(k for k, t in self.tokens.items() if t["activationId"] == a["id"]),
                    "lastVaultReason": a.get("lastVaultReason"), "vaultUnlocks": a.get("vaultUnlocks", 0), "stats": dict(self.stats),
                    "versionsSeen": sorted(self.versions_seen),
                    "fingerprint": pa.fingerprint_v3(a["devicePub"], a["id"], pa.pub_bytes(a["serverPriv"].public_key()))
                    if a["devicePub"] else None}
        raise Refusal(404, "ERR_ACTIVATION", "unknown admin path")


ROUTES = {
    "/pa/v3/keystore/create": "keystore_create",
    "/pa/v3/activation/create": "activation_create",
    "/pa/v3/activation/status": "activation_status",
    "/pa/v3/activation/remove": "activation_remove",
    "/pa/v3/activation/detail": "activation_detail",
    "/pa/v3/signature/validate": "signature_validate",
    "/pa/v3/token/create": "token_create",
    "/pa/v3/token/remove": "token_remove",
    "/pa/v3/vault/unlock": "vault_unlock",
    "/pa/v3/user/info": "user_info",
    "/pa/v3/status": "server_status",
}


def make_handler(srv):
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            if os.environ.get("PA_SERVER_LOG"):
                sys.stderr.write("pa_server: " + (fmt % args) + "\n")

        def send(self, status, obj):
            b = out(obj)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(b)))
            self.end_headers()
            self.wfile.write(b)

        def do_GET(self):
            self.send(405, {"status": "ERROR", "responseObject": {"code": "ERROR_GENERIC", "message": "POST only"}})

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n else b""
            path = self.path.split("?")[0]
            try:
                try:
                    req = json.loads(raw) if raw else {}
                except ValueError:
                    req = None
                with srv.lock:
                    srv.expire_blocks()
                    if path.startswith("/test-admin/"):
                        if self.headers.get("X-Test-Admin-Token") != srv.admin_token:
                            raise Refusal(403, "ERR_AUTHENTICATION", "admin token")
                        return self.send(200, {"status": "OK", "responseObject": srv.admin(path[len("/test-admin/"):], req)})
                    name = ROUTES.get(path)
                    if name is None:
                        raise Refusal(404, "ERROR_NOT_FOUND", "unknown path")
                    if req is None and name not in ("signature_validate", "activation_remove"):
                        raise Refusal(400, "ERR_ACTIVATION" if "activation" in name else "ERR_ENCRYPTION", "bad JSON")
                    status, obj = getattr(srv, name)(req, self.headers, raw)
                self.send(status, obj)
            except Refusal as r:
                self.send(r.status, {"status": "ERROR", "responseObject": {"code": r.code, "message": r.message}})

    return H


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--versions", default="3.0,3.1,3.2,3.3")
    ap.add_argument("--max-failures", type=int, default=5)
    ap.add_argument("--dialect", choices=dia.DIALECTS, default=dia.current())
    ap.add_argument("--custom-object", choices=("none", "rich"), default="none")
    ap.add_argument("--vault-biometry", action="store_true")
    args = ap.parse_args()
    dia.set_dialect(args.dialect)
    srv = Server(tuple(args.versions.split(",")), args.max_failures,
                 RICH_CUSTOM_OBJECT if args.custom_object == "rich" else None, args.vault_biometry)
    httpd = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(srv))
    httpd.daemon_threads = True
    print("pa_server: listening on http://127.0.0.1:%d" % httpd.server_address[1])
    print(srv.config)
    print("admin-token: " + srv.admin_token, flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A PowerAuth V3.x client (what the mobile SDK sends), written from the upstream documents,
and the interoperability scenario that drives a server with it.

    python3 pa_client.py scenario --url BASE --admin-url BASE --admin-token T --admin-style securepin|pa_server
                                  [--config STRING] [--versions 3.0,3.1,3.2,3.3] [--known-differences FILE]

Every check prints one line (`ok`, `FAIL` or `known difference`) and the last line is
`pa_client: N passed, M failed, K known differences`; the exit status is 1 on any failure.
Endpoints, envelopes and shapes: wultra/powerauth-restful-integration controllers and models,
wultra/powerauth-mobile-sdk (networking/endpoints, HttpRequestHelper, GetTemporaryKeyTask).
"""
import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import powerauth as pa  # noqa: E402
import dialect as dia  # noqa: E402


class ProtocolFailure(Exception):
    """The server answered something a PowerAuth client must not accept."""


class Response:
    def __init__(self, status, body, raw):
        self.status, self.body, self.raw = status, body, raw

    def ok(self):
        return self.status == 200

    def error_code(self):
        try:
            return self.body["responseObject"]["code"]
        except (TypeError, KeyError):
            return None

    def __repr__(self):
        return "HTTP %s %s" % (self.status, self.raw[:300].decode("utf-8", "replace"))


def http_post(url, body_bytes, headers, timeout=20):
    h = {"Content-Type": "application/json", "Accept": "application/json"}
    h.update(headers or {})
    req = urllib.request.Request(url, data=body_bytes, headers=h, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw, status = r.read(), r.status
    except urllib.error.HTTPError as e:
        raw, status = e.read(), e.code
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        body = None
    return Response(status, body, raw)


def dumps(obj):
    """The body bytes as the selected SDK writes them (dialect.py); codes are computed over these."""
    return dia.dumps(obj)


# Android's X-PowerAuth-Encryption (space-separated, EciesMetadata.java): per path, how often the
# server took it and its answers when it refused one that the ", " form of the same request passed.
ANDROID_HEADER = {}


class Client:
    def __init__(self, base_url, config, version="3.3"):
        self.base = base_url.rstrip("/")
        self.cfg = pa.parse_config(config)
        self.app_key = self.cfg["appKey"]
        self.app_secret = self.cfg["appSecret"]
        self.master_pub = self.cfg["masterPublicKey"]
        self.version = version
        self.activation_id = None
        self.log = []
        self.temp_cache = {}

    # ---------------------------------------------------------------- transport
    def post(self, path, body_bytes, headers=None):
        r = http_post(self.base + path, body_bytes, headers)
        enc = (headers or {}).get("X-PowerAuth-Encryption")
        if enc and dia.current() == "android" and '", ' not in enc:
            rec = ANDROID_HEADER.setdefault(path, {"accepted": 0, "refused": []})
            if r.ok():
                rec["accepted"] += 1
            elif 400 <= r.status < 500:
                # The same bytes with the iOS/C++ form of the header: when that passes, the header
                # alone was refused (a failed check at the end); the scenario goes on with that answer.
                h2 = dict(headers)
                h2["X-PowerAuth-Encryption"] = enc.replace('" ', '", ')
                r2 = http_post(self.base + path, body_bytes, h2)
                if r2.ok():
                    rec["refused"].append(r)
                    r = r2
        self.log.append((path, r.status))
        return r

    # ---------------------------------------------------------------- temporary keys (3.3)
    def temporary_key(self, scope):
        """POST /pa/v3/keystore/create with an HS256 request JWT; verify the ES256 response JWT
        (Temporary-Encryption-Keys.md; mobile-sdk GetTemporaryKeyTask.java)."""
        challenge = pa.b64e(os.urandom(18))
        claims = {"applicationKey": self.app_key}
        if scope == "activation":
            claims["activationId"] = self.activation_id
        claims["challenge"] = challenge
        key = pa.hs256_key(self.app_secret, self.keys["transport"] if scope == "activation" else None)
        # the payload as the SDK's JSON writer makes it (GetTemporaryKeyTask.java: Gson of
        # GetTemporaryKeyRequest {applicationKey, activationId, challenge}; iOS: NSJSONSerialization)
        jwt = pa.jwt_hs256(claims, key, encode=dumps)
        r = self.post("/pa/v3/keystore/create", dumps({"requestObject": {"jwt": jwt}}))
        if not r.ok():
            raise ProtocolFailure("keystore/create (%s scope) refused: %r" % (scope, r))
        if not isinstance(r.body, dict) or r.body.get("status") != "OK" or not isinstance(r.body.get("responseObject"), dict):
            raise ProtocolFailure("keystore/create: not {status:OK, responseObject}: %r" % r)
        jwt = r.body["responseObject"].get("jwt")
        signer = self.master_pub if scope == "application" else self.server_pub
        try:
            got = pa.jwt_verify_es256(jwt, signer)
        except (ValueError, TypeError) as e:
            raise ProtocolFailure("keystore/create: response JWT: %s" % e)
        if got.get("challenge") != challenge or got.get("applicationKey") != self.app_key:
            raise ProtocolFailure("keystore/create: challenge/applicationKey do not match: %r" % got)
        if scope == "activation" and got.get("activationId") != self.activation_id:
            raise ProtocolFailure("keystore/create: activationId does not match: %r" % got)
        for f in ("sub", "publicKey", "iat", "exp", "iat_ms", "exp_ms"):
            if f not in got:
                raise ProtocolFailure("keystore/create: claim %s missing: %r" % (f, got))
        if got["exp_ms"] <= pa.now_ms():
            raise ProtocolFailure("keystore/create: key already expired")
        pub = pa.b64d(got["publicKey"])
        pa.pub_from_bytes(pub)
        self.last_temp_claims = got
        return got["sub"], pub

    def encryptor(self, scope, sh1):
        """ECIES context for one request (End-To-End-Encryption.md); 3.3 uses a temporary key."""
        tid = None
        if self.version == "3.3":
            # Reused until 10 s before it expires, as the SDK does (DefaultKeystoreService.java)
            cached = self.temp_cache.get((scope, self.activation_id))
            if cached and pa.now_ms() < cached[2] - 10_000:
                tid, pub = cached[0], cached[1]
            else:
                tid, pub = self.temporary_key(scope)
                self.temp_cache[(scope, self.activation_id)] = (tid, pub, self.last_temp_claims["exp_ms"])
        else:
            pub = self.master_pub if scope == "application" else self.server_pub
        sh2b = pa.sh2_base(self.app_secret, self.keys["transport"] if scope == "activation" else None)
        ad = pa.associated_data(self.version, self.app_key, self.activation_id if scope == "activation" else None, tid)
        return pa.EciesContext.client(self.version, pub, sh1, sh2b, ad), tid

    def encryption_header(self, scope):
        return {"X-PowerAuth-Encryption": dia.v3_encryption_header(
            self.version, self.app_key, self.activation_id if scope == "activation" else None)}

    def decrypt(self, ctx, r, what):
        if not r.ok():
            raise ProtocolFailure("%s refused: %r" % (what, r))
        body = r.body
        if not isinstance(body, dict) or "encryptedData" not in body or "mac" not in body:
            raise ProtocolFailure("%s: not a bare EciesEncryptedResponse: %r" % (what, r))
        if self.version in ("3.2", "3.3") and ("nonce" not in body or "timestamp" not in body):
            raise ProtocolFailure("%s: %s response needs nonce and timestamp: %r" % (what, self.version, r))
        try:
            return json.loads(ctx.decrypt_response(body))
        except (pa.EciesError, ValueError, KeyError) as e:
            raise ProtocolFailure("%s: response does not decrypt: %s" % (what, e))

    # ---------------------------------------------------------------- activation
    def activate(self, code, name="interop client", code_signature=None):
        """Activation-via-Activation-Code.md; two ECIES layers, application scope."""
        if not pa.validate_activation_code(code):
            raise ProtocolFailure("activation code %r fails its CRC-16/ARC check" % code)
        if code_signature is not None and not pa.verify_code_signature(self.master_pub, code, code_signature):
            raise ProtocolFailure("activation code signature does not verify with the master key")
        self.keys = {"transport": None}
        self.device = pa.new_keypair()
        dev_pub = pa.pub_bytes(self.device.public_key(), compressed=True)
        l2 = {"devicePublicKey": pa.b64e(dev_pub), "activationName": name, "platform": "unknown",
              "deviceInfo": "pa_client.py"}
        ctx2, tid2 = self.encryptor("application", pa.SH1["activation_layer_2"])
        l2enc = ctx2.encrypt_request(dumps(l2), tid2)
        l1 = {"type": "CODE", "identityAttributes": {"code": code}, "activationData": l2enc}
        ctx1, tid1 = self.encryptor("application", pa.SH1["activation_layer_1"])
        body = ctx1.encrypt_request(dumps(l1), tid1)
        r = self.post("/pa/v3/activation/create", dumps(body), self.encryption_header("application"))
        l1resp = self.decrypt(ctx1, r, "activation/create layer 1")
        if not isinstance(l1resp.get("activationData"), dict):
            raise ProtocolFailure("activation/create: layer 1 has no activationData object: %r" % l1resp)
        try:
            l2resp = json.loads(ctx2.decrypt_response(l1resp["activationData"]))
        except (pa.EciesError, ValueError, KeyError) as e:
            raise ProtocolFailure("activation/create: layer 2 does not decrypt: %s" % e)
        for f in ("activationId", "serverPublicKey", "ctrData"):
            if f not in l2resp:
                raise ProtocolFailure("activation/create: layer 2 lacks %s: %r" % (f, l2resp))
        self.activation_id = l2resp["activationId"]
        self.server_pub = pa.b64d(l2resp["serverPublicKey"])
        self.ctr = pa.b64d(l2resp["ctrData"])
        self.ctr_history = [self.ctr]
        if len(self.ctr) != 16:
            raise ProtocolFailure("ctrData is not 16 bytes")
        self.keys = pa.derive_keys(pa.master_secret(self.device, pa.pub_from_bytes(self.server_pub)))
        self.fingerprint = pa.fingerprint_v3(dev_pub, self.activation_id, self.server_pub)
        return l1resp, l2resp

    # ---------------------------------------------------------------- status
    def status(self):
        ro = {"activationId": self.activation_id}
        challenge = None
        if self.version != "3.0":
            challenge = os.urandom(16)
            ro["challenge"] = pa.b64e(challenge)
        r = self.post("/pa/v3/activation/status", dumps({"requestObject": ro}))
        if not r.ok() or not isinstance(r.body, dict) or r.body.get("status") != "OK":
            raise ProtocolFailure("activation/status refused: %r" % r)
        o = r.body["responseObject"]
        if o.get("activationId") != self.activation_id:
            raise ProtocolFailure("activation/status: other activationId: %r" % o)
        nonce = pa.b64d(o["nonce"]) if challenge is not None else None
        try:
            s = pa.decrypt_status_blob(self.keys["transport"], challenge, nonce, pa.b64d(o["encryptedStatusBlob"]))
        except (ValueError, KeyError) as e:
            raise ProtocolFailure("activation/status: blob does not decrypt: %s (%r)" % (e, r))
        # Where the server's counter is relative to ours (Activation-Status.md, CTR_DATA_HASH):
        # 0 = same, k > 0 = we are k codes ahead (codes the server never accepted), k < 0 = behind.
        tk, dist = self.keys["transport"], None
        for k, c in enumerate(reversed(self.ctr_history[-64:])):
            if pa.ctr_data_hash(tk, c) == s["ctrDataHash"]:
                dist = k
                break
        if dist is None:
            c = self.ctr
            for k in range(1, 64):
                c = pa.next_ctr(c)
                if pa.ctr_data_hash(tk, c) == s["ctrDataHash"]:
                    dist = -k
                    break
        s["counterDistance"] = dist
        return s

    # ---------------------------------------------------------------- signatures
    def auth(self, uri_id, body, factors, wrong_knowledge=False, version=None):
        v = version or self.version
        nonce = pa.b64e(os.urandom(16))
        keys = []
        for f in pa.FACTOR_SETS[factors]:
            k = self.keys[f]
            if f == "knowledge" and wrong_knowledge:
                k = os.urandom(16)  # what a wrong PIN unlocks: another knowledge key
            keys.append(k)
        data = pa.normalized_data("POST", uri_id, nonce, body, self.app_secret)
        sig = pa.compute_signature(v, data, keys, self.ctr)
        self.ctr = pa.next_ctr(self.ctr)  # the counter moves after every code computed
        self.ctr_history.append(self.ctr)
        return {"X-PowerAuth-Authorization": pa.auth_header(v, self.activation_id, self.app_key, nonce, factors, sig)}

    def synchronize(self):
        """When we are ahead of the server (refused requests whose codes it never saw), send a
        possession-only code with reason COUNTER_SYNCHRONIZATION, as the SDK does
        (GetActivationStatusTask.java); the server catches up through its look-ahead window."""
        s = self.status()
        if s["counterDistance"] is not None and s["counterDistance"] > 0:
            body = dumps({"requestObject": {"reason": "COUNTER_SYNCHRONIZATION"}})
            r = self.post("/pa/v3/signature/validate", body, self.auth("/pa/signature/validate", body, "possession"))
            if not r.ok():
                raise ProtocolFailure("counter synchronization refused: %r" % r)
            s = self.status()
        return s

    def validate(self, factors, wrong_knowledge=False, reason="VALIDATE_PASSWORD"):
        body = dumps({"requestObject": {"reason": reason}})
        return self.post("/pa/v3/signature/validate", body, self.auth("/pa/signature/validate", body, factors, wrong_knowledge))

    def remove(self, factors="possession_knowledge"):
        body = b"{}"
        return self.post("/pa/v3/activation/remove", body, self.auth("/pa/activation/remove", body, factors))

    # ---------------------------------------------------------------- encrypted + signed
    def signed_encrypted(self, path, uri_id, sh1, plaintext, factors, mutate=None):
        """Encrypt-then-sign: the code covers the exact bytes of the encrypted body; no
        X-PowerAuth-Encryption header (End-To-End-Encryption.md box, HttpRequestHelper.java)."""
        ctx, tid = self.encryptor("activation", sh1)
        enc = ctx.encrypt_request(plaintext, tid)
        if mutate:
            enc = mutate(enc, ctx)
        body = dumps(enc)
        return ctx, enc, self.post(path, body, self.auth(uri_id, body, factors))

    def token_create(self, factors="possession_knowledge"):
        ctx, _, r = self.signed_encrypted("/pa/v3/token/create", "/pa/token/create", pa.SH1["token_create"], b"{}", factors)
        t = self.decrypt(ctx, r, "token/create")
        if not isinstance(t.get("tokenId"), str) or len(pa.b64d(t.get("tokenSecret", ""))) != 16:
            raise ProtocolFailure("token/create: want tokenId and a 16-byte tokenSecret: %r" % t)
        return t["tokenId"], pa.b64d(t["tokenSecret"])

    def token_remove(self, token_id, factors="possession"):
        body = dumps({"requestObject": {"tokenId": token_id}})
        return self.post("/pa/v3/token/remove", body, self.auth("/pa/token/remove", body, factors))

    def vault_unlock(self, factors="possession_knowledge", reason="FETCH_ENCRYPTION_KEY"):
        ctx, _, r = self.signed_encrypted("/pa/v3/vault/unlock", "/pa/vault/unlock", pa.SH1["vault_unlock"],
                                          dumps({"reason": reason}), factors)
        v = self.decrypt(ctx, r, "vault/unlock")
        try:
            key = pa.decrypt_vault_key(self.keys["transport"], pa.b64d(v["encryptedVaultEncryptionKey"]))
        except (ValueError, KeyError) as e:
            raise ProtocolFailure("vault/unlock: encryptedVaultEncryptionKey: %s (%r)" % (e, v))
        if key != self.keys["vault"]:
            raise ProtocolFailure("vault/unlock: the vault key is not KDF(master, 2000)")
        return key

    # ---------------------------------------------------------------- encrypted, unsigned
    def user_info(self, mutate=None, ctx_enc=None):
        ctx, tid = self.encryptor("activation", pa.SH1["generic_activation"])
        enc = ctx.encrypt_request(b"{}", tid)
        if mutate:
            enc = mutate(enc, ctx)
        r = self.post("/pa/v3/user/info", dumps(enc), self.encryption_header("activation"))
        return ctx, enc, r

    def activation_detail_with_token(self, token_id, secret, header=None, timestamp=None):
        ctx, tid = self.encryptor("activation", pa.SH1["generic_activation"])
        enc = ctx.encrypt_request(b"{}", tid)
        h = self.encryption_header("activation")
        h["X-PowerAuth-Token"] = header or pa.token_header(self.version, token_id, secret, timestamp,
                                                           version_first=dia.sdk_headers())
        self.last_token_header = h["X-PowerAuth-Token"]
        return ctx, self.post("/pa/v3/activation/detail", dumps(enc), h)

    def server_status(self):
        return self.post("/pa/v3/status", b"{}")


# ================================================================================================
# Back offices: SecurePIN's (docs/reference-server.md) and pa_server.py's test hook
# ================================================================================================


class BackOffice:
    def __init__(self, url, token, style):
        self.url, self.token, self.style = url.rstrip("/"), token, style

    def call(self, op, obj):
        if self.style == "securepin":
            path, hdr = "/admin/activation/" + op, {"X-SecurePIN-Admin-Token": self.token}
        else:
            path, hdr = "/test-admin/" + op, {"X-Test-Admin-Token": self.token}
        r = http_post(self.url + path, dia.dumps({"requestObject": obj}, "plain"), hdr)
        if not r.ok():
            raise ProtocolFailure("back office %s: %r" % (op, r))
        return r.body.get("responseObject") or {}

    def init(self, user="interop-user"):
        return self.call("init", {"userId": user})

    def commit(self, aid):
        return self.call("commit", {"activationId": aid})

    def detail(self, aid):
        return self.call("detail", {"activationId": aid})


# ================================================================================================
# Scenario
# ================================================================================================


class Checks:
    def __init__(self, known):
        self.passed = self.failed = self.known_count = 0
        self.known = known  # name prefix -> issue

    def check(self, name, cond, detail=""):
        if cond:
            self.passed += 1
            print("ok - %s" % name)
            return True
        for prefix, issue in self.known.items():
            if name.startswith(prefix):
                self.known_count += 1
                print("known difference: %s -- %s (%s)" % (name, issue, detail))
                return False
        self.failed += 1
        print("FAIL - %s: %s" % (name, detail))
        return False

    def run(self, name, fn):
        """Runs fn; a ProtocolFailure or refusal is a failed check named `name`."""
        try:
            out = fn()
            self.check(name, True)
            return out
        except (ProtocolFailure, pa.EciesError, ValueError, KeyError, TypeError) as e:
            self.check(name, False, "%s: %s" % (type(e).__name__, e))
            return None


def refused_cleanly(r):
    """A PowerAuth refusal: 4xx with {"status":"ERROR","responseObject":{"code","message"}}."""
    return 400 <= r.status < 500 and isinstance(r.body, dict) and r.body.get("status") == "ERROR" and bool(r.error_code())


def failures_of(bo, aid):
    d = bo.detail(aid)
    return d.get("failedAttempts"), d.get("state")


def new_active_client(a, bo, config, version, name, checks, label):
    c = Client(a.url, config, version)
    init = bo.init()
    code, sig = init["activationCode"], init.get("activationSignature")
    checks.check("%s back office init gives a CRC-valid code" % label, pa.validate_activation_code(code), code)
    if sig is not None:
        checks.check("%s activation code signature verifies with the master key" % label,
                     pa.verify_code_signature(c.master_pub, code, sig), sig)
    c.activate(code, name, sig)
    bo.commit(c.activation_id)
    return c


def scenario(a):
    known = {}
    if a.known_differences and os.path.exists(a.known_differences):
        for line in open(a.known_differences):
            line = line.strip()
            if line and not line.startswith("#") and "|" in line:
                k, v = line.split("|", 1)
                known[k.strip()] = v.strip()
    ck = Checks(known)
    bo = BackOffice(a.admin_url or a.url, a.admin_token, a.admin_style)
    config = a.config
    if a.matrix_only:
        version_matrix(a, bo, config, ck)
        android_header_checks(ck)
        return ck
    try:
        pa.parse_config(config)
        ck.check("configuration string parses as MOBILE_SDK_CONFIG", True)
    except ValueError as e:
        ck.check("configuration string parses as MOBILE_SDK_CONFIG", False, "%s: %r" % (e, config))
        return ck

    state = {}
    print("dialect: %s" % dia.current())
    section(ck, "3.3 main path", lambda: main_path(a, bo, ck, config, state))
    if "client" in state:
        section(ck, "ECIES abuse", lambda: ecies_abuse(state["client"], bo, ck, a, config))
        section(ck, "blocking", lambda: blocking(state["client"], bo, ck, state.get("maxf", 5)))
    section(ck, "remove", lambda: removal(a, bo, ck, config))
    section(ck, "version matrix", lambda: version_matrix(a, bo, config, ck))
    android_header_checks(ck)
    return ck


def android_header_checks(ck):
    """One check per path that got Android's space-separated X-PowerAuth-Encryption."""
    for path in sorted(ANDROID_HEADER):
        rec = ANDROID_HEADER[path]
        ck.check("android %s: X-PowerAuth-Encryption in the SDK's form (space-separated, no comma: proj-android "
                 "EciesMetadata.getHttpHeaderValue) accepted" % path, not rec["refused"],
                 "refused %d time(s) (the same request with \", \" passed), accepted %d; first answer: %r"
                 % (len(rec["refused"]), rec["accepted"], rec["refused"][0] if rec["refused"] else None))


def section(ck, name, fn):
    """One part of the scenario; an exception ends that part as one failed check, not the run."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - any surprise from the server is a finding
        ck.check("%s: ran to the end" % name, False, "%s: %s" % (type(e).__name__, e))


def main_path(a, bo, ck, config, state):
    # ---------------------------------------------------------------- V3.3 main path
    v = "3.3"
    c = Client(a.url, config, v)
    r = c.server_status()
    ck.check("3.3 /pa/v3/status answers {status:OK, responseObject{serverTime}}",
             r.ok() and isinstance(r.body, dict) and r.body.get("status") == "OK"
             and isinstance((r.body.get("responseObject") or {}).get("serverTime"), int), repr(r))
    init = bo.init()
    code, sig = init["activationCode"], init.get("activationSignature")
    ck.check("back office code passes CRC-16/ARC", pa.validate_activation_code(code), code)
    if sig is not None:
        ck.check("CODE#SIGNATURE verifies with KEY_SERVER_MASTER_PUBLIC", pa.verify_code_signature(c.master_pub, code, sig), sig)
    ck.run("3.3 application-scope temporary key (keystore/create, ES256 JWT by the master key)",
           lambda: c.temporary_key("application"))
    got = ck.run("3.3 activation/create (two ECIES layers, temporary key)", lambda: c.activate(code, "interop", sig))
    if got is None:
        print("pa_client: activation failed; the rest of the 3.3 path cannot run")
        return
    print("fingerprint %s activationId %s" % (c.fingerprint, c.activation_id))
    s = ck.run("3.3 activation/status before commit", c.status)
    if s:
        ck.check("status before commit is PENDING_COMMIT (2)", s["state"] == 2, s)
    bo.commit(c.activation_id)
    s = ck.run("3.3 activation/status after commit", c.status)
    state["client"] = c
    if s:
        ck.check("status after commit is ACTIVE (3), version byte 3", s["state"] == 3 and s["currentVersion"] == 3, s)
        ck.check("status blob counter hash is our counter", s["counterDistance"] == 0, s)
        ck.check("status blob failures 0", s["failedAttempts"] == 0, s)
        ck.check("status blob max failures > 0, look-ahead > 0", s["maxFailedAttempts"] > 0 and s["ctrLookAhead"] > 0, s)
        state["maxf"] = s["maxFailedAttempts"]
    r = c.post("/pa/v3/activation/status", dumps({"requestObject": {
        "activationId": "00000000-0000-4000-8000-000000000001", "challenge": pa.b64e(os.urandom(16))}}))
    ck.check("status of an unknown activation: 200 with 32 random bytes (powerauth-server ActivationServiceBehavior)",
             r.ok() and len(pa.b64d(((r.body or {}).get("responseObject") or {}).get("encryptedStatusBlob", ""))) == 32, repr(r))
    ck.run("3.3 activation-scope temporary key (HS256 keyed KDF_INTERNAL(KEY_TRANSPORT, secret), ES256 by KEY_SERVER_PRIVATE)",
           lambda: c.temporary_key("activation"))
    for f in ("possession", "possession_knowledge", "possession_biometry", "possession_knowledge_biometry"):
        r = c.validate(f)
        ck.check("3.3 signature/validate %s accepted" % f, r.ok() and (r.body or {}).get("status") == "OK", repr(r))
    # counter: the client goes ahead by 3 codes the server never sees; look-ahead accepts
    for _ in range(3):
        c.ctr = pa.next_ctr(c.ctr)
    r = c.validate("possession_knowledge")
    ck.check("3.3 code 3 steps ahead accepted (look-ahead)", r.ok(), repr(r))
    s = c.status()
    ck.check("status counter hash follows the client after look-ahead", s["counterDistance"] == 0, s)
    la = s["ctrLookAhead"]
    # the window is half-open, [CTR, CTR + LOOK_AHEAD) (Computing-and-Validating-Signatures.md)
    for _ in range(la - 1):
        c.ctr = pa.next_ctr(c.ctr)
        c.ctr_history.append(c.ctr)
    r = c.validate("possession")
    ck.check("3.3 code at CTR + look-ahead - 1 (%d) accepted" % (la - 1), r.ok(), repr(r))
    for _ in range(la):
        c.ctr = pa.next_ctr(c.ctr)
        c.ctr_history.append(c.ctr)
    r = c.validate("possession")
    ck.check("3.3 code at CTR + look-ahead (%d) refused" % la, r.status == 401, repr(r))
    s = c.status()
    ck.check("status shows the client %d codes ahead, failures still 0" % (la + 1),
             s["counterDistance"] == la + 1 and s["failedAttempts"] == 0, s)
    c.ctr = c.ctr_history[-(la + 2)]  # back to the server's counter (test only: the SDK cannot rewind)
    c.ctr_history.append(c.ctr)
    s = c.synchronize()
    ck.check("counter back in step", s["counterDistance"] == 0, s)

    # the code covers the exact body bytes: the same code over a body with one more space is refused
    body = dumps({"requestObject": {"reason": "VALIDATE_PASSWORD"}})
    h = c.auth("/pa/signature/validate", body, "possession")
    r = c.post("/pa/v3/signature/validate", body + b" ", h)
    ck.check("3.3 a code over other body bytes is refused 401", r.status == 401, repr(r))
    # another application key in the header
    body = b"{}"
    h = c.auth("/pa/signature/validate", body, "possession")
    h["X-PowerAuth-Authorization"] = h["X-PowerAuth-Authorization"].replace(c.app_key, pa.b64e(os.urandom(16)))
    r = c.post("/pa/v3/signature/validate", body, h)
    ck.check("3.3 an unknown application key is refused 401", r.status == 401, repr(r))
    # the uriId is part of the data: a code made for /pa/token/remove does not validate
    h = c.auth("/pa/token/remove", body, "possession")
    r = c.post("/pa/v3/signature/validate", body, h)
    ck.check("3.3 a code for another uriId is refused 401", r.status == 401, repr(r))
    s = c.synchronize()
    ck.check("refused possession-only codes counted nothing", s["failedAttempts"] == 0, s)

    # wrong possession-only code: refused, not counted
    r = c.post("/pa/v3/signature/validate", b"{}", {"X-PowerAuth-Authorization": pa.auth_header(
        v, c.activation_id, c.app_key, pa.b64e(os.urandom(16)), "possession", pa.b64e(os.urandom(16)))})
    ck.check("3.3 wrong possession-only code refused 401 ERR_AUTHENTICATION",
             r.status == 401 and r.error_code() == "ERR_AUTHENTICATION", repr(r))
    s = c.status()
    ck.check("wrong possession-only code not counted (status blob failures 0)", s["failedAttempts"] == 0, s)
    # wrong PIN: counted
    r = c.validate("possession_knowledge", wrong_knowledge=True)
    ck.check("3.3 wrong PIN refused 401 ERR_AUTHENTICATION", r.status == 401 and r.error_code() == "ERR_AUTHENTICATION", repr(r))
    s = c.status()
    ck.check("wrong PIN counted (status blob failures 1)", s["failedAttempts"] == 1, s)
    f, st = failures_of(bo, c.activation_id)
    ck.check("back office agrees: failures 1, ACTIVE", f == 1 and st == "ACTIVE", (f, st))
    r = c.validate("possession")
    s = c.status()
    ck.check("possession-only success does not reset failures", r.ok() and s["failedAttempts"] == 1, (r, s))
    r = c.validate("possession_knowledge")
    s = c.status()
    ck.check("knowledge success resets failures to 0", r.ok() and s["failedAttempts"] == 0, (r, s))
    c.validate("possession_knowledge", wrong_knowledge=True)
    r = c.validate("possession_biometry")
    s = c.status()
    ck.check("biometry success resets failures to 0", r.ok() and s["failedAttempts"] == 0, (r, s))

    # token
    tok = ck.run("3.3 token/create (activation-scope ECIES /pa/token/create, encrypt-then-sign)", lambda: c.token_create())
    if tok:
        tid, tsecret = tok
        cx, r = c.activation_detail_with_token(tid, tsecret)
        if r.status == 404:
            # upstream has it (restful-integration ActivationController.java, @PowerAuthToken)
            ck.check("3.3 token-checked call /pa/v3/activation/detail exists", False, repr(r))
        else:
            ok = False
            try:
                # the controller returns ObjectResponse<ActivationDetailResponse> and the
                # encryption advice encrypts that whole object (ActivationController.java)
                d = c.decrypt(cx, r, "activation/detail")
                ok = d.get("status") == "OK" and (d.get("responseObject") or {}).get("activationId") == c.activation_id
            except ProtocolFailure as e:
                d = e
            ck.check("3.3 X-PowerAuth-Token digest accepted on activation/detail", ok, repr(d))
            _, r2 = c.activation_detail_with_token(tid, tsecret, header=c.last_token_header.replace(
                "token_id=\"%s\"" % tid, "token_id=\"%s\"" % tid))
            ck.check("a replayed X-PowerAuth-Token (same nonce) is refused 401 (powerauth-server TokenBehavior)",
                     r2.status == 401, repr(r2))
            _, r2 = c.activation_detail_with_token(tid, os.urandom(16))
            ck.check("a wrong token digest is refused 401", r2.status == 401, repr(r2))
            _, r2 = c.activation_detail_with_token(tid, tsecret, timestamp=pa.now_ms() - 3 * 3600 * 1000)
            ck.check("a token timestamp 3 h old is refused 401 (token.timestamp.validity 2 h)", r2.status == 401, repr(r2))
            # digest without the 3.3 version suffix (the 3.0/3.1 form) under version="3.3"
            nonce, ts = os.urandom(16), pa.now_ms()
            d = pa.token_digest("3.1", tsecret, nonce, ts)
            hdr = 'PowerAuth token_id="%s", token_digest="%s", nonce="%s", timestamp="%s", version="3.3"' % (
                tid, pa.b64e(d), pa.b64e(nonce), ts)
            _, r2 = c.activation_detail_with_token(tid, tsecret, header=hdr)
            ck.check("a 3.3 token digest without the &version suffix is refused 401", r2.status == 401, repr(r2))
        r = c.token_remove(tid)
        ck.check("3.3 token/remove", r.ok() and (r.body.get("responseObject") or {}).get("tokenId") == tid, repr(r))
    ck.run("3.3 vault/unlock: encryptedVaultEncryptionKey opens to KDF(master, 2000)", lambda: c.vault_unlock())
    def vault_possession_only():
        r = c.signed_encrypted("/pa/v3/vault/unlock", "/pa/vault/unlock", pa.SH1["vault_unlock"],
                               dumps({"reason": "FETCH_ENCRYPTION_KEY"}), "possession")[2]
        if not refused_cleanly(r):
            raise ProtocolFailure("accepted: %r" % r)
    ck.run("3.3 vault/unlock with possession only is refused", vault_possession_only)
    # powerauth-server VaultUnlockServiceBehavior: POSSESSION_KNOWLEDGE only (POSSESSION_BIOMETRY when
    # configured, off by default), checked before the code is verified: a wrong PIN under another set
    # is refused without being counted (restful-integration SecureVaultService: 400 ERR_SECURE_VAULT).
    before = c.status()["failedAttempts"]
    r = c.signed_encrypted("/pa/v3/vault/unlock", "/pa/vault/unlock", pa.SH1["vault_unlock"],
                           dumps({"reason": "FETCH_ENCRYPTION_KEY"}), "possession_knowledge_biometry")[2]
    s = c.synchronize()
    ck.check("3.3 vault/unlock possession_knowledge_biometry refused 4xx (upstream: possession_knowledge only), "
             "nothing counted", refused_cleanly(r) and s["failedAttempts"] == before, "%r, status %r" % (r, s))
    try:
        cx, _, r = c.user_info()
        ui = c.decrypt(cx, r, "user/info")
        ck.check("3.3 user/info (activation-scope ECIES /pa/generic/activation)", isinstance(ui, dict), repr(ui))
    except ProtocolFailure as e:
        ck.check("3.3 user/info (activation-scope ECIES /pa/generic/activation)", False, str(e))



def blocking(c, bo, ck, maxf):
    # ---------------------------------------------------------------- blocked at the maximum
    s = c.status()
    start = s["failedAttempts"]
    for i in range(start, maxf):
        r = c.validate("possession_knowledge", wrong_knowledge=True)
        if not r.status == 401:
            ck.check("wrong PIN %d refused" % (i + 1), False, repr(r))
    s = c.status()
    ck.check("blocked at the maximum (%d wrong PINs): status BLOCKED (4), failures = max" % maxf,
             s["state"] == 4 and s["failedAttempts"] == maxf, s)
    f, st = failures_of(bo, c.activation_id)
    ck.check("back office agrees: BLOCKED", st == "BLOCKED", (f, st))
    r = c.validate("possession_knowledge")
    ck.check("right PIN on a blocked activation refused 401", r.status == 401, repr(r))
    r = c.server_status()
    ck.check("server still serving after the block", r.ok(), repr(r))



def removal(a, bo, ck, config):
    # ---------------------------------------------------------------- remove (fresh activation)
    c2 = ck.run("3.3 second activation for remove", lambda: new_active_client(a, bo, config, "3.3", "remove", ck, "3.3"))
    if c2:
        r = c2.remove("possession")
        ck.check("activation/remove with possession only is refused 401 (2FA/3FA only: ActivationController."
                 "removeActivation, PowerAuthAuthenticationProviderBase defaults)", r.status == 401, repr(r))
        if r.ok():
            print("note: the possession-only remove went through; the 2FA remove runs on a new activation")
            c2 = new_active_client(a, bo, config, "3.3", "remove-2", ck, "3.3")
        r = c2.remove("possession_knowledge")
        ck.check("3.3 activation/remove possession_knowledge",
                 r.ok() and (r.body.get("responseObject") or {}).get("activationId") == c2.activation_id, repr(r))
        s = c2.status()
        ck.check("status after remove is REMOVED (5)", s["state"] == 5, s)
        r = c2.validate("possession_knowledge")
        ck.check("a code for a removed activation is refused 401", r.status == 401, repr(r))



def mutations(version):
    """Broken ECIES requests. 'timestamp 61 s old' is built by the caller: a right MAC over an
    old timestamp, re-encrypted with the same context."""
    def tamper_mac(enc, _):
        m = bytearray(pa.b64d(enc["mac"]))
        m[0] ^= 1
        enc["mac"] = pa.b64e(bytes(m))
        return enc

    def drop_field(enc, _):
        enc.pop("ephemeralPublicKey")
        return enc

    def garbage(enc, _):
        enc["encryptedData"] = "not base64!"
        return enc

    out = [("tampered mac", tamper_mac), ("missing ephemeralPublicKey", drop_field), ("encryptedData not Base64", garbage)]
    if version in ("3.2", "3.3"):
        out.append(("timestamp 61 s old", None))
    return out


def ecies_abuse(c, bo, ck, a, config):
    """Malformed, replayed and expired ECIES requests on every encrypted endpoint: refused with
    a PowerAuth error, nothing counted, the server still serving."""
    v = c.version
    base_fail = c.status()["failedAttempts"]

    def after(name):
        s = c.synchronize()
        ck.check("%s: nothing counted" % name, s["failedAttempts"] == base_fail and s["state"] == 3, s)
        r = c.server_status()
        ck.check("%s: server still serving" % name, r.ok(), repr(r))

    if v == "3.3":
        try:
            c.temporary_key("activation")
        except ProtocolFailure as e:
            ck.check("ECIES abuse on activation-scope endpoints: an activation-scope temporary key is needed",
                     False, str(e))
            return ecies_abuse_activation_create(c, bo, ck, a, config)
    plaintexts = {"token/create": b"{}", "vault/unlock": dumps({"reason": "FETCH_ENCRYPTION_KEY"})}
    for ep, uri, sh1 in (("token/create", "/pa/token/create", pa.SH1["token_create"]),
                         ("vault/unlock", "/pa/vault/unlock", pa.SH1["vault_unlock"])):
        pt = plaintexts[ep]
        for label, fn in mutations(v):
            def mut(enc, ctx, fn=fn, label=label):
                if label.startswith("timestamp"):
                    return ctx.encrypt_request(pt, enc.get("temporaryKeyId"), timestamp=pa.now_ms() - 61_000)
                return fn(enc, ctx)
            _, _, r = c.signed_encrypted("/pa/v3/" + ep, uri, sh1, pt, "possession_knowledge", mutate=mut)
            ck.check("%s %s: %s refused with a PowerAuth error" % (v, ep, label), refused_cleanly(r), repr(r))
            after("%s %s %s" % (v, ep, label))
        # replay: the same ECIES body again, under a fresh, valid authentication code
        ctx, enc, r = c.signed_encrypted("/pa/v3/" + ep, uri, sh1, pt, "possession_knowledge")
        ck.check("%s %s: original request accepted" % (v, ep), r.ok(), repr(r))
        body = dumps(enc)
        r = c.post("/pa/v3/" + ep, body, c.auth(uri, body, "possession_knowledge"))
        ck.check("%s %s: replayed ECIES request refused" % (v, ep), refused_cleanly(r), repr(r))
        after("%s %s replay" % (v, ep))

    # user/info (unsigned, activation scope)
    for label, fn in mutations(v):
        def mut(enc, ctx, fn=fn, label=label):
            if label.startswith("timestamp"):
                return ctx.encrypt_request(b"{}", enc.get("temporaryKeyId"), timestamp=pa.now_ms() - 61_000)
            return fn(enc, ctx)
        _, _, r = c.user_info(mutate=mut)
        ck.check("%s user/info: %s refused with a PowerAuth error" % (v, label), refused_cleanly(r), repr(r))
        after("%s user/info %s" % (v, label))
    ctx, enc, r = c.user_info()
    ck.check("%s user/info: original accepted" % v, r.ok(), repr(r))
    r = c.post("/pa/v3/user/info", dumps(enc), c.encryption_header("activation"))
    ck.check("%s user/info: replayed ECIES request refused" % v, refused_cleanly(r), repr(r))
    after("%s user/info replay" % v)
    if v == "3.3":
        # a temporary key id the server never issued; and an application-scope key used in activation scope
        def unknown_key(enc, ctx):
            enc["temporaryKeyId"] = "00000000-0000-4000-8000-000000000000"
            return enc
        _, _, r = c.user_info(mutate=unknown_key)
        ck.check("3.3 user/info: unknown temporaryKeyId refused", refused_cleanly(r), repr(r))
        tid, pub = c.temporary_key("application")
        sh2b = pa.sh2_base(c.app_secret, c.keys["transport"])
        ad = pa.associated_data("3.3", c.app_key, c.activation_id, tid)
        cx = pa.EciesContext.client("3.3", pub, pa.SH1["generic_activation"], sh2b, ad)
        r = c.post("/pa/v3/user/info", dumps(cx.encrypt_request(b"{}", tid)), c.encryption_header("activation"))
        ck.check("3.3 user/info: an application-scope temporary key refused in activation scope", refused_cleanly(r), repr(r))
        after("3.3 user/info wrong-scope key")
        # X-PowerAuth-Encryption missing on an unsigned encrypted request
        cx, tid = c.encryptor("activation", pa.SH1["generic_activation"])
        r = c.post("/pa/v3/user/info", dumps(cx.encrypt_request(b"{}", tid)), {})
        ck.check("3.3 user/info without X-PowerAuth-Encryption refused", refused_cleanly(r), repr(r))

    ecies_abuse_activation_create(c, bo, ck, a, config)


def ecies_abuse_activation_create(c, bo, ck, a, config):
    v = c.version
    # activation/create (application scope, two layers): a fresh code each time
    for label, fn in mutations(v) + [("replay", None)]:
        init = bo.init()
        cc = Client(a.url, config, v)
        cc.keys = {"transport": None}
        dev = pa.new_keypair()
        l2 = {"devicePublicKey": pa.b64e(pa.pub_bytes(dev.public_key(), True)), "activationName": "abuse"}
        ctx2, t2 = cc.encryptor("application", pa.SH1["activation_layer_2"])
        l1 = {"type": "CODE", "identityAttributes": {"code": init["activationCode"]},
              "activationData": ctx2.encrypt_request(dumps(l2), t2)}
        ctx1, t1 = cc.encryptor("application", pa.SH1["activation_layer_1"])
        enc = ctx1.encrypt_request(dumps(l1), t1)
        if label == "replay":
            r = cc.post("/pa/v3/activation/create", dumps(enc), cc.encryption_header("application"))
            ck.check("%s activation/create: original accepted" % v, r.ok(), repr(r))
            init2 = bo.init()  # a fresh code exists, but the replayed body names the used one
            r = cc.post("/pa/v3/activation/create", dumps(enc), cc.encryption_header("application"))
            ck.check("%s activation/create: replayed request refused" % v, refused_cleanly(r), repr(r))
            d = bo.detail(init2["activationId"])
            ck.check("%s activation/create replay: the other code untouched" % v, d.get("state") == "CREATED", d)
        else:
            if label.startswith("timestamp"):
                enc = ctx1.encrypt_request(dumps(l1), t1, timestamp=pa.now_ms() - 61_000)
            else:
                enc = fn(enc, ctx1)
            r = cc.post("/pa/v3/activation/create", dumps(enc), cc.encryption_header("application"))
            ck.check("%s activation/create: %s refused with a PowerAuth error" % (v, label), refused_cleanly(r), repr(r))
            d = bo.detail(init["activationId"])
            ck.check("%s activation/create %s: activation still CREATED" % (v, label), d.get("state") == "CREATED", d)
        r = c.server_status()
        ck.check("%s activation/create %s: server still serving" % (v, label), r.ok(), repr(r))
    # layer 2 broken inside a sound layer 1
    init = bo.init()
    cc = Client(a.url, config, v)
    cc.keys = {"transport": None}
    ctx2, t2 = cc.encryptor("application", pa.SH1["activation_layer_2"])
    l2enc = ctx2.encrypt_request(dumps({"devicePublicKey": pa.b64e(pa.pub_bytes(pa.new_keypair().public_key(), True))}), t2)
    l2enc["mac"] = pa.b64e(bytes(32))
    ctx1, t1 = cc.encryptor("application", pa.SH1["activation_layer_1"])
    enc = ctx1.encrypt_request(dumps({"type": "CODE", "identityAttributes": {"code": init["activationCode"]},
                                      "activationData": l2enc}), t1)
    r = cc.post("/pa/v3/activation/create", dumps(enc), cc.encryption_header("application"))
    ck.check("%s activation/create: bad layer-2 MAC refused" % v, refused_cleanly(r), repr(r))
    # layer 2 encrypted with the wrong SHARED_INFO_1 (/pa/generic/application instead of /pa/activation)
    ctx2, t2 = cc.encryptor("application", pa.SH1["generic_application"])
    l2enc = ctx2.encrypt_request(dumps({"devicePublicKey": pa.b64e(pa.pub_bytes(pa.new_keypair().public_key(), True))}), t2)
    ctx1, t1 = cc.encryptor("application", pa.SH1["activation_layer_1"])
    enc = ctx1.encrypt_request(dumps({"type": "CODE", "identityAttributes": {"code": init["activationCode"]},
                                      "activationData": l2enc}), t1)
    r = cc.post("/pa/v3/activation/create", dumps(enc), cc.encryption_header("application"))
    ck.check("%s activation/create: layer 2 under the wrong SHARED_INFO_1 refused" % v, refused_cleanly(r), repr(r))
    d = bo.detail(init["activationId"])
    ck.check("%s activation/create broken layer 2: activation still CREATED" % v, d.get("state") == "CREATED", d)


ENDPOINTS = ("activation/create", "activation/status", "signature/validate", "token/create", "token/remove",
             "vault/unlock", "user/info", "activation/remove")


def version_matrix(a, bo, config, ck):
    """Every protocol version against every endpoint: accepted (and then right) or refused cleanly."""
    table, notes = {}, []
    for v in a.versions.split(","):
        row = {}
        c = Client(a.url, config, v)
        init = bo.init()

        def attempt(ep, fn):
            try:
                fn()
                row[ep] = "accepted"
            except ProtocolFailure as e:
                msg = str(e)
                if " refused: HTTP 4" in msg and '"status": "ERROR"' in msg.replace('"status":"ERROR"', '"status": "ERROR"'):
                    row[ep] = "refused"
                    notes.append("  %s %s: %s" % (v, ep, msg.split(" refused: ", 1)[1][:200]))
                else:
                    row[ep] = "BROKEN"
                    ck.check("%s %s: accepted and correct, or refused cleanly" % (v, ep), False, msg)

        attempt("activation/create", lambda: c.activate(init["activationCode"], "matrix-" + v))
        if row["activation/create"] != "accepted":
            # Requests carry their own version: try the other endpoints at v on a 3.3 activation
            c.version = "3.3"
            c.activate(bo.init()["activationCode"], "matrix-" + v)
            c.version = v
            c.temp_cache.clear()
        bo.commit(c.activation_id)

        def st():
            s = c.status()
            if s["state"] != 3:
                raise ProtocolFailure("status not ACTIVE: %r" % s)
        attempt("activation/status", st)

        def val():
            r = c.validate("possession_knowledge")
            if not r.ok():
                raise ProtocolFailure("signature/validate refused: %r" % r)
        attempt("signature/validate", val)
        tok = {}

        def tc():
            tok["t"] = c.token_create()
        attempt("token/create", tc)

        def tr():
            if "t" not in tok:
                raise ProtocolFailure("no token")
            r = c.token_remove(tok["t"][0])
            if not r.ok():
                raise ProtocolFailure("token/remove refused: %r" % r)
        if "t" in tok:
            attempt("token/remove", tr)
        else:
            row["token/remove"] = "n/a"
        attempt("vault/unlock", lambda: c.vault_unlock())

        def ui():
            cx, _, r = c.user_info()
            c.decrypt(cx, r, "user/info")
        attempt("user/info", ui)

        def rm():
            r = c.remove()
            if not r.ok():
                raise ProtocolFailure("activation/remove refused: %r" % r)
        if row.get("signature/validate") == "refused":
            c.version, keep = "3.3", c.version
            s = c.status()
            c.version = keep
            ck.check("%s refused signatures counted nothing" % v, s["failedAttempts"] == 0, s)
        attempt("activation/remove", rm)
        table[v] = row
    print("version matrix (accepted / refused / BROKEN = accepted but wrong); where activation/create")
    print("refused a version, the other endpoints were tried at that version on a 3.3 activation:")
    print("  %-20s %s" % ("endpoint", " ".join("%-9s" % v for v in table)))
    for ep in ENDPOINTS:
        print("  %-20s %s" % (ep, " ".join("%-9s" % table[v].get(ep, "-") for v in table)))
    if notes:
        print("refusals:")
        print("\n".join(notes))
    # Upstream accepts 3.0-3.3 on every endpoint (restful-integration PowerAuthVersionUtil.SUPPORTED_VERSIONS):
    # a refusal is a failed check unless the server was set to refuse that version (--expect-refused);
    # what SecurePIN chooses to refuse is listed, with its reason, in known-differences.txt.
    expected = set(filter(None, a.expect_refused.split(",")))
    for v in table:
        if v in expected:
            continue
        for ep in ENDPOINTS:
            got = table[v].get(ep)
            if got == "n/a":
                continue
            detail = "; ".join(n.strip() for n in notes if n.strip().startswith("%s %s:" % (v, ep))) or got
            ck.check("%s matrix: %s accepted" % (v, ep), got == "accepted", detail)
    for v in filter(None, a.expect_refused.split(",")):
        ck.check("%s refused cleanly at activation/create" % v, table.get(v, {}).get("activation/create") == "refused",
                 table.get(v))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("scenario")
    s.add_argument("--url", required=True)
    s.add_argument("--config", required=True)
    s.add_argument("--admin-url")
    s.add_argument("--admin-token", required=True)
    s.add_argument("--admin-style", choices=("securepin", "pa_server"), required=True)
    s.add_argument("--versions", default="3.0,3.1,3.2,3.3")
    s.add_argument("--known-differences")
    s.add_argument("--matrix-only", action="store_true", help="only the protocol-version matrix")
    s.add_argument("--expect-refused", default="", help="versions the server is set to refuse (checked)")
    s.add_argument("--dialect", choices=dia.DIALECTS, default=dia.current(),
                   help="write JSON and headers as the Android or iOS SDK does (dialect.py); default $INTEROP_DIALECT or plain")
    a = ap.parse_args()
    if a.cmd == "scenario":
        dia.set_dialect(a.dialect)
    if a.cmd == "scenario":
        t0 = time.time()
        ck = scenario(a)
        print("pa_client: %d passed, %d failed, %d known differences (%.1f s)" % (
            ck.passed, ck.failed, ck.known_count, time.time() - t0))
        sys.exit(1 if ck.failed else 0)


if __name__ == "__main__":
    main()

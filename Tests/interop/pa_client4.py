#!/usr/bin/env python3
"""A PowerAuth V4 client (suites EC_P384, EC_P384_ML_L3, EC_P384_ML_L5), written from the upstream
documents and reference code, and the scenario that drives a V4 enrollment server with it
(README.md, "Protocol V4").

    python3 pa_client4.py scenario --url BASE --config STRING --admin-token T [--suite S] [--known-differences FILE]

With a hybrid --suite every check name starts with "v4 SUITE " (known-differences.txt matches by prefix).

Every check prints one line (`ok`, `FAIL` or `known difference`); notes that are not checks start
with `note -`. The last line is `interop4: N passed, M failed` (known differences are neither).
Endpoints and shapes: powerauth-crypto docs/Standard-RESTful-API.md (V4), End-To-End-Encryption.md,
Temporary-Encryption-Keys.md; mobile-sdk AeadEncryptorFactory.cpp, SharedSecret.cpp, FunctionsV4.cpp.
"""
import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import powerauth4 as pa  # noqa: E402
import powerauth as pa3  # noqa: E402  (only the activation code format, unchanged in V4)
import dialect as dia  # noqa: E402

from cryptography.hazmat.primitives import hashes  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.exceptions import InvalidSignature  # noqa: E402


class ProtocolFailure(Exception):
    """The server answered something a PowerAuth V4 client must not accept."""


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


def http_post(url, body, headers=None, timeout=20):
    h = {"Content-Type": "application/json", "Accept": "application/json"}
    h.update(headers or {})
    req = urllib.request.Request(url, data=body, headers=h, method="POST")
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


def refused_cleanly(r):
    """A PowerAuth refusal: 4xx with {"status":"ERROR","responseObject":{"code","message"}}."""
    return 400 <= r.status < 500 and isinstance(r.body, dict) and r.body.get("status") == "ERROR" and bool(r.error_code())


class TemporaryKey:
    def __init__(self, kid, secret, exp_ms, claims):
        self.kid, self.secret, self.exp_ms, self.claims = kid, secret, exp_ms, claims


class Client:
    """What the mobile SDK sends in protocol 4.0, suite EC_P384 or a hybrid suite."""

    def __init__(self, base, config, suite=pa.SUITE):
        self.base = base.rstrip("/")
        self.suite = suite
        self.cfg = pa.parse_config(config)
        if 0x02 not in self.cfg["keys"]:
            raise ProtocolFailure("configuration has no P-384 master key (id 0x02)")
        self.master_pub = pa.pub_from_bytes(self.cfg["keys"][0x02])
        # Hybrid suites: the ML-DSA master key of the suite's level (SDK-Configuration.md, key 0x03
        # ML-DSA-65 / 0x04 ML-DSA-87), which signs application-scope temporary keys with the P-384 key.
        self.mldsa_alg = pa.HYBRID[suite][1] if suite in pa.HYBRID else None
        self.master_mldsa = None
        if self.mldsa_alg:
            self.master_mldsa = self.cfg["mldsa"].get(self.mldsa_alg)
            if self.master_mldsa is None:
                raise ProtocolFailure("configuration has no %s master key (id 0x%02x) for %s"
                                      % (self.mldsa_alg, pa.HYBRID[suite][2], suite))
        self.server_mldsa = None
        self.server_mldsa_bytes = b""
        self.device_mldsa = None
        self.last_jws = None
        self.app_key = self.cfg["appKey"]
        self.app_secret = self.cfg["appSecret"]
        self.app_secret_raw = self.cfg["appSecretRaw"]
        self.activation_id = None
        self.keys = None
        self.knowledge = self.biometry = None
        self.ctr = None
        self.server_pub = None
        self.temp = {}
        self.last_shapes = {}
        self.wrapped_keystore_refused = None
        # upstream's request JWT has no iat/exp; when the server refuses it, the refusal is kept (a
        # failed check) and the client adds them, only to reach the later steps
        self.iat_exp_refused = None
        self.add_iat_exp = False
        self.unwrapped_keystore_response = None
        # A signed request carries only X-PowerAuth-Authorization (README: upstream reading); the
        # scenario turns this on after recording the server's refusal, to reach the later steps.
        self.signed_enc_header = False

    def post(self, path, body, headers=None):
        return http_post(self.base + path, body, headers)

    # -------------------------------------------------------------- temporary keys
    def temporary_key(self, scope, jwt_key=None, fresh=False):
        """POST /pa/v4/keystore/create (Temporary-Encryption-Keys.md, AeadEncryptorFactory.cpp)."""
        cached = self.temp.get(scope)
        if cached and not fresh and pa.now_ms() < cached.exp_ms - 10_000:
            return cached
        challenge = pa.b64e(os.urandom(32))
        ssc = pa.SharedSecretClient(self.suite)
        claims = upstream_claims(self.app_key, self.activation_id if scope == "activation" else None, challenge,
                                 ssc.request())
        if jwt_key is None:
            jwt_key = self.keys.mac_get_act_temp_key if scope == "activation" else pa.mac_get_app_temp_key(
                self.app_secret_raw)
        if self.add_iat_exp:
            claims = with_iat_exp(claims)
        r = self.post_keystore(pa.jwt_hs384(claims, jwt_key, encode=dumps))
        if not r.ok() and not self.add_iat_exp and self.iat_exp_refused is None:
            r2 = self.post_keystore(pa.jwt_hs384(with_iat_exp(claims), jwt_key, encode=dumps))
            if r2.ok():
                self.iat_exp_refused, self.add_iat_exp, r = r, True, r2
        self.last_keystore = r
        if not r.ok():
            raise ProtocolFailure("keystore/create (%s scope) refused: %r" % (scope, r))
        wrapped = isinstance(r.body, dict) and r.body.get("status") == "OK" and isinstance(r.body.get("responseObject"), dict)
        if not wrapped:
            if self.unwrapped_keystore_response is None:
                self.unwrapped_keystore_response = r
            if not isinstance(r.body, dict):
                raise ProtocolFailure("keystore/create: not a JSON object: %r" % r)
        jws = (r.body["responseObject"] if wrapped else r.body).get("jwt")
        if not isinstance(jws, str):
            raise ProtocolFailure("keystore/create: responseObject.jwt is not a string: %r" % r)
        self.last_jws = (scope, jws)
        got = pa.jws_json_verify(jws, *self.jws_keys(scope), suite=self.suite)
        if got.get("challenge") != challenge or got.get("applicationKey") != self.app_key:
            raise ProtocolFailure("keystore/create: challenge/applicationKey not echoed: %r" % got)
        if scope == "activation" and got.get("activationId") != self.activation_id:
            raise ProtocolFailure("keystore/create: activationId not echoed: %r" % got)
        for f in ("sub", "sharedSecretResponse", "iat", "exp", "iat_ms", "exp_ms"):
            if f not in got:
                raise ProtocolFailure("keystore/create: claim %s missing: %r" % (f, got))
        if got["exp_ms"] <= pa.now_ms():
            raise ProtocolFailure("keystore/create: key already expired")
        secret = ssc.finish(got["sharedSecretResponse"])
        tk = TemporaryKey(got["sub"], secret, got["exp_ms"], got)
        self.temp[scope] = tk
        return tk

    def post_keystore(self, jwt):
        """Upstream wraps the request: {"requestObject": {"jwt"}} (Standard-RESTful-API.md V4; mobile-sdk
        EndpointSpec: keystore/create is unencrypted and not FL_NOT_WRAPPED, so RequestBuilder wraps it).
        When only the bare {"jwt"} passes, the refusal is kept (a failed check) and the bare answer used."""
        r = self.post("/pa/v4/keystore/create", dumps({"requestObject": {"jwt": jwt}}))
        if r.ok():
            return r
        rb = self.post("/pa/v4/keystore/create", dumps({"jwt": jwt}))
        if rb.ok():
            if self.wrapped_keystore_refused is None:
                self.wrapped_keystore_refused = r
            return rb
        return r

    def jws_keys(self, scope):
        """The keys a temporary key's JWS must verify under: the master keys (application scope) or the
        activation's server keys (activation scope); ECDSA P-384, plus ML-DSA in a hybrid suite."""
        if scope == "application":
            return self.master_pub, self.master_mldsa
        return self.server_pub, self.server_mldsa

    def e2ee(self, scope, sh1):
        tk = self.temporary_key(scope)
        act = self.activation_id if scope == "activation" else None
        return pa.E2EE(tk.secret, sh1, self.app_key, self.app_secret_raw, tk.kid, act,
                       self.keys.e2ee_sh2 if act else None)

    def encryption_header(self, scope):
        # the SDKs' core (mobile-sdk HttpHeaderHelper.cpp buildEncryptionRequestHeader) joins with ", "
        # on Android and iOS alike in protocol 4
        h = 'PowerAuth version="4.0", application_key="%s"' % self.app_key
        if scope == "activation":
            h += ', activation_id="%s"' % self.activation_id
        return {"X-PowerAuth-Encryption": h}

    # -------------------------------------------------------------- authentication codes
    def factor_keys(self, factors, knowledge=None, biometry=None):
        out = [self.keys.possession]
        if "knowledge" in factors:
            out.append(knowledge if knowledge is not None else self.knowledge)
        if "biometry" in factors:
            out.append(biometry if biometry is not None else self.biometry)
        return out

    def auth(self, factors, uri_id, body, knowledge=None, biometry=None, method="POST"):
        nonce = os.urandom(16)
        data = pa.normalized_data(method, uri_id, nonce, body, self.app_secret)
        code = pa.auth_code_online(self.factor_keys(factors, knowledge, biometry), self.ctr, data)
        self.ctr = pa.next_ctr(self.ctr)  # moves after every code computed (SDK)
        return {"X-PowerAuth-Authorization": pa.auth_header(self.activation_id, self.app_key, nonce, factors, code,
                                                            sdk_order=dia.sdk_headers())}

    # -------------------------------------------------------------- activation
    def activate(self, code, name="interop4", ss_suite=None):
        """POST /pa/v4/activation/create: two application-scope layers (Standard-RESTful-API.md V4).
        `ss_suite` sends the sharedSecretRequest in another suite (a refusal check)."""
        self.device = pa.p384_generate()
        ssc = pa.SharedSecretClient(ss_suite or self.suite)
        dpk = {"ecdsa": pa.b64e(pa.pub_bytes(self.device.public_key()))}
        if self.mldsa_alg:
            # Hybrid suites: the device also has an ML-DSA key pair of the suite's level (design digest
            # section 11, Activation-via-Activation-Code.md V4 devicePublicKeys {ecdsa, mldsa}), SPKI DER.
            cls = {"ML-DSA-65": pa.mldsa.MLDSA65PrivateKey, "ML-DSA-87": pa.mldsa.MLDSA87PrivateKey}[self.mldsa_alg]
            self.device_mldsa = cls.generate()
            dpk["mldsa"] = pa.b64e(pa.spki(self.device_mldsa.public_key()))
        l2 = {"sharedSecretRequest": ssc.request(), "devicePublicKeys": dpk,
              "activationName": name, "platform": "unknown", "deviceInfo": "python-interop4"}
        self.keys = None
        tk = self.temporary_key("application")
        e2 = pa.E2EE(tk.secret, pa.SH1["activation_layer2"], self.app_key, self.app_secret_raw, tk.kid)
        e1 = pa.E2EE(tk.secret, pa.SH1["generic_application"], self.app_key, self.app_secret_raw, tk.kid)
        l1 = {"type": "CODE", "identityAttributes": {"code": code}, "customAttributes": {},
              "activationData": e2.encrypt_request(dumps(l2))}
        r = self.post("/pa/v4/activation/create", dumps(e1.encrypt_request(dumps(l1))),
                      self.encryption_header("application"))
        if not r.ok():
            raise ProtocolFailure("activation/create refused: %r" % r)
        out1 = json.loads(e1.decrypt_response(r.body))
        self.last_shapes["activation layer 1"] = sorted(out1)
        out2 = json.loads(e2.decrypt_response(out1["activationData"]))
        self.last_shapes["activation layer 2"] = sorted(out2)
        secret = ssc.finish(out2["sharedSecretResponse"])
        ctr = pa.b64d(out2["ctrData"])
        if len(ctr) != 32:
            raise ProtocolFailure("ctrData must be 32 bytes, got %d" % len(ctr))
        self.server_pub_bytes = pa.b64d(out2["serverPublicKeys"]["ecdsa"])
        self.server_pub = pa.pub_from_bytes(self.server_pub_bytes)
        if self.mldsa_alg:
            spk = out2["serverPublicKeys"].get("mldsa")
            if not isinstance(spk, str):
                raise ProtocolFailure("%s activation: serverPublicKeys.mldsa missing: %r" % (self.suite, out2["serverPublicKeys"]))
            self.server_mldsa_bytes = pa.b64d(spk)
            self.server_mldsa = pa.mldsa_public_from_spki(self.mldsa_alg, self.server_mldsa_bytes)
        self.activation_id = out2["activationId"]
        self.keys = pa.ActivationKeys(secret)
        self.knowledge, self.biometry, self.ctr = self.keys.knowledge, self.keys.biometry, ctr
        self.temp.pop("activation", None)
        return out1, out2

    def status(self, mutate=None):
        """POST /pa/v4/activation/status, activation-scope E2EE of `{}` (the SDK's form)."""
        e = self.e2ee("activation", pa.SH1["activation_status"])
        body = e.encrypt_request(b"{}")
        if mutate:
            body = mutate(body, e)
        r = self.post("/pa/v4/activation/status", dumps(body), self.encryption_header("activation"))
        return e, body, r

    def read_status(self):
        e, _, r = self.status()
        if not r.ok():
            raise ProtocolFailure("activation/status refused: %r" % r)
        obj = json.loads(e.decrypt_response(r.body))
        self.last_shapes["status"] = sorted(obj)
        inner = obj.get("responseObject", obj) if isinstance(obj, dict) else obj
        return pa.parse_status_blob(pa.b64d(inner["activationStatus"]), self.keys.mac_status), obj

    def signed_plain(self, path, uri_id, factors, obj, **kw):
        body = dumps(obj)
        return self.post(path, body, self.auth(factors, uri_id, body, **kw))

    def signed_encrypted(self, path, uri_id, sh1, factors, plaintext, mutate=None, **kw):
        """Encrypt-then-authenticate: the code is over the encrypted body bytes."""
        e = self.e2ee("activation", sh1)
        enc = e.encrypt_request(plaintext)
        if mutate:
            enc = mutate(enc, e)
        body = dumps(enc)
        h = self.auth(factors, uri_id, body, **kw)
        if self.signed_enc_header:
            h.update(self.encryption_header("activation"))
        return e, enc, self.post(path, body, h)

    def validate(self, factors, **kw):
        return self.signed_plain("/pa/v4/auth/validate", "/pa/auth/validate", factors, {"requestObject": {"data": "interop4"}}, **kw)

    def dynamic_key(self, path, uri_id, sh1, ss_suite=None):
        """password/change, biometry/add: a SharedSecret exchange inside activation-scope E2EE."""
        ssc = pa.SharedSecretClient(ss_suite or self.suite)
        e, _, r = self.signed_encrypted(path, uri_id, sh1, "possession_knowledge", dumps(ssc.request()))
        if not r.ok():
            raise ProtocolFailure("%s refused: %r" % (path, r))
        obj = json.loads(e.decrypt_response(r.body))
        self.last_shapes[path] = sorted(obj)
        inner = obj.get("responseObject", obj) if "sharedSecretResponse" not in obj and "salt" not in obj else obj
        ssr = inner.get("sharedSecretResponse", inner)
        return ssc.finish(ssr)


def upstream_claims(app_key, activation_id, challenge, shared_secret_request):
    """The request JWT's claims exactly as upstream has them: powerauth-crypto features/crypto4
    lib/v4/model/request/GetTemporaryKeyRequest.java {applicationKey, activationId, challenge,
    sharedSecretRequest} (mobile-sdk GetTemporaryKeyRequest::toJson the same four); no iat/exp."""
    c = {"applicationKey": app_key}
    if activation_id is not None:
        c["activationId"] = activation_id
    c["challenge"] = challenge
    c["sharedSecretRequest"] = shared_secret_request
    return c


def with_iat_exp(claims):
    """What SecurePIN's own client adds (powerauth-java-crypto TemporaryKeyTest payloads carry them):
    used only after the upstream form was refused, to reach the later steps."""
    t = int(time.time())
    return dict(claims, iat=t, exp=t + 300)


class BackOffice:
    def __init__(self, url, token):
        self.url, self.token = url.rstrip("/"), token

    def call(self, op, obj):
        r = http_post(self.url + "/admin/activation/" + op, dia.dumps({"requestObject": obj}, "plain"),
                      {"X-SecurePIN-Admin-Token": self.token})
        if not r.ok():
            raise ProtocolFailure("back office %s: %r" % (op, r))
        return r.body.get("responseObject") or {}


class Checks:
    def __init__(self, known, suite=pa.SUITE):
        self.passed = self.failed = self.known_count = 0
        self.known = known
        self.prefix = "v4 " if suite == pa.SUITE else "v4 %s " % suite

    def check(self, name, cond, detail=""):
        name = self.prefix + name
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
        try:
            out = fn()
            self.check(name, True)
            return out
        except (ProtocolFailure, ValueError, KeyError, TypeError, AttributeError) as e:
            self.check(name, False, "%s: %s" % (type(e).__name__, e))
            return None


def load_known(path):
    known = {}
    if path and os.path.exists(path):
        for line in open(path):
            line = line.strip()
            if line and not line.startswith("#") and "|" in line:
                k, v = line.split("|", 1)
                known[k.strip()] = v.strip()
    return known


def verify_code_signature(pub, code, sig_b64, h=None):
    try:
        pub.verify(pa.b64d(sig_b64), code.encode(), ec.ECDSA(h or hashes.SHA384()))
        return True
    except (InvalidSignature, ValueError):
        return False


def new_client(a, bo, ck, user, label, commit=True):
    c = Client(a.url, a.config, a.suite)
    init = bo.call("init", {"userId": user})
    code, sig = init["activationCode"], init.get("activationSignature")
    if label:
        ck.check("back office init: a CRC-valid activation code", pa3.validate_activation_code(code), code)
        if sig is not None:
            ck.check("activation code signature: ECDSA-P384/SHA-384 by the P-384 master key (Activation-via-Activation-Code.md V4)",
                     verify_code_signature(c.master_pub, code, sig), "signature %d bytes" % len(pa.b64d(sig)))
    c.activate(code)
    if commit:
        bo.call("commit", {"activationId": c.activation_id})
    return c


def scenario(a):
    ck = Checks(load_known(a.known_differences), a.suite)
    bo = BackOffice(a.url, a.admin_token)
    c = Client(a.url, a.config, a.suite)
    ck.check("configuration string: 16-byte key and secret, P-384 master key 0x02 (49 bytes, compressed)",
             len(c.cfg["keys"][0x02]) == 49, "key 02 is %d bytes" % len(c.cfg["keys"][0x02]))
    if c.mldsa_alg:
        kid = pa.HYBRID[a.suite][2]
        size = {"ML-DSA-65": 1974, "ML-DSA-87": 2614}[c.mldsa_alg]
        ck.check("configuration string: %s master key 0x%02x is an SPKI DER of %d bytes (SDK-Configuration.md)"
                 % (c.mldsa_alg, kid, size), len(c.cfg["keys"][kid]) == size, "key %02x is %d bytes" % (kid, len(c.cfg["keys"][kid])))
        other = 0x04 if kid == 0x03 else 0x03
        print("note - configuration key ids: %s (the other level's key 0x%02x %s)" % (
            sorted("%02x" % k for k in c.cfg["keys"]), other, "present" if other in c.cfg["keys"] else "absent"))

    # ---- /pa/v4/status (restful-integration docs/RESTful-API-Methods.md: ObjectRequest<ServerStatusRequest>
    # with an optional applicationKey; ObjectResponse {serverTime, supportedAlgorithms, application})
    r = c.post("/pa/v4/status", dumps({"requestObject": {"applicationKey": c.app_key}}))
    ro = (r.body or {}).get("responseObject") or {}
    ck.check("/pa/v4/status: 200 {status OK, responseObject {serverTime, supportedAlgorithms, application}}",
             r.ok() and isinstance(ro.get("serverTime"), int) and "application" in ro, repr(r))
    ck.check("/pa/v4/status: this application's supportedAlgorithms name %s" % a.suite,
             a.suite in (ro.get("supportedAlgorithms") or []), repr(ro))

    # ---- keystore, application scope
    what = ("ES384 JWS JSON by the master key" if not c.mldsa_alg else
            "ES384 + %s JWS JSON by the master keys 0x02 + 0x%02x (both verified)" % (c.mldsa_alg, pa.HYBRID[a.suite][2]))
    kems = "DHKEM" if not c.mldsa_alg else "DHKEM + %s" % pa.HYBRID[a.suite][0]
    tk = ck.run("keystore/create application scope: HS384 JWT in, %s out, challenge echoed, %s + KMAC secret" % (what, kems),
                lambda: c.temporary_key("application"))
    if tk and c.mldsa_alg:
        hybrid_jws_checks(ck, c, "application")
    wrong_suite_checks(ck, c, a.suite)
    ck.check("keystore/create accepts the upstream request envelope {requestObject: {jwt}} (Standard-RESTful-API.md V4, "
             "mobile-sdk EndpointSpec/RequestBuilder)", c.wrapped_keystore_refused is None, repr(c.wrapped_keystore_refused))
    ck.check("keystore/create answers in the upstream envelope {status: OK, responseObject: {jwt}} (Standard-RESTful-API.md V4, "
             "mobile-sdk EndpointSpec: not FL_NOT_WRAPPED)", c.unwrapped_keystore_response is None,
             repr(c.unwrapped_keystore_response)[:160])
    if tk:
        ck.check("keystore/create: exp_ms after iat_ms, about 5 minutes (E2E: server default 5 min)",
                 0 < tk.claims["exp_ms"] - tk.claims["iat_ms"] <= 10 * 60 * 1000, repr(tk.claims))
        ck.check("keystore/create: sub (temporary key id) is non-empty", bool(tk.claims["sub"]), repr(tk.claims))
    ck.check("keystore/create accepts upstream's request JWT {applicationKey, challenge, sharedSecretRequest} without "
             "iat/exp (powerauth-crypto features/crypto4 GetTemporaryKeyRequest.java, mobile-sdk GetTemporaryKeyRequest::toJson)",
             c.iat_exp_refused is None, repr(c.iat_exp_refused))
    accepted = _try_keystore(c, os.urandom(32))
    ck.check("keystore/create with a JWT under a wrong MAC key: refused 4xx PowerAuth error body",
             not accepted and refused_cleanly(c.last_keystore), repr(c.last_keystore))
    r = c.post("/pa/v4/keystore/create", dumps({"requestObject": {"jwt": "not-a-jwt"}}))
    ck.check("keystore/create malformed JWT: 4xx PowerAuth error body", refused_cleanly(r), repr(r))

    # ---- activation
    user = "interop4-user" if a.suite == pa.SUITE else "interop4-user-" + a.suite
    init = bo.call("init", {"userId": user})
    code, sig = init["activationCode"], init.get("activationSignature")
    ck.check("back office init: a CRC-valid activation code", pa3.validate_activation_code(code), code)
    if sig is not None:
        ck.check("activation code signature: ECDSA-P384/SHA-384 by the P-384 master key (Activation-via-Activation-Code.md V4)",
                 verify_code_signature(c.master_pub, code, sig), "signature %d bytes" % len(pa.b64d(sig)))
        if 0x01 in c.cfg["keys"]:
            p256 = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), c.cfg["keys"][0x01])
            print("note - the activation code signature verifies under the P-256 (V3) master key 0x01 with SHA-256: %s"
                  % verify_code_signature(p256, code, sig, hashes.SHA256()))
    # a wrong code is refused and changes nothing
    c0 = Client(a.url, a.config, a.suite)
    try:
        c0.activate("AAAAA-AAAAA-AAAAA-AAAAA")
        ck.check("activation/create with an unknown code refused", False, "accepted")
    except ProtocolFailure as e:
        ck.check("activation/create with an unknown code refused", "HTTP 4" in str(e), str(e))
    # a sharedSecretRequest in another suite than the application's: refused (an activation keeps
    # the application's suite; SharedSecret.cpp refuses an algorithm other than its own)
    other = "EC_P384" if a.suite in pa.HYBRID else "EC_P384_ML_L3"
    init_w = bo.call("init", {"userId": user + "-wrong-suite"})
    cw = Client(a.url, a.config, a.suite)
    try:
        cw.activate(init_w["activationCode"], ss_suite=other)
        ck.check("activation/create with a sharedSecretRequest in suite %s refused 4xx" % other, False, "accepted")
    except ProtocolFailure as e:
        ck.check("activation/create with a sharedSecretRequest in suite %s refused 4xx" % other, "HTTP 4" in str(e), str(e))
    dw = bo.call("detail", {"activationId": init_w["activationId"]})
    print("note - the activation after the wrong-suite activation/create: %s" % dw.get("state"))
    out = ck.run("activation/create: two E2EE layers (sh1 /pa/generic/application, /pa/activation), %s + KMAC secret" % kems,
                 lambda: c.activate(code))
    if not out:
        return ck
    out1, out2 = out
    ck.check("activation/create layer 2 response: activationId, sharedSecretResponse, serverPublicKeys.ecdsa, ctrData",
             all(k in out2 for k in ("activationId", "sharedSecretResponse", "serverPublicKeys", "ctrData")), repr(sorted(out2)))
    ck.check("activation/create: activationId equals the back office's", c.activation_id == init["activationId"],
             "%s vs %s" % (c.activation_id, init["activationId"]))
    ck.check("activation/create: server ECDSA key is a P-384 point", len(c.server_pub_bytes) in (49, 97), len(c.server_pub_bytes))
    if c.mldsa_alg:
        ck.check("activation/create: serverPublicKeys.mldsa is an %s SPKI, not the master key" % c.mldsa_alg,
                 c.server_mldsa is not None and pa.spki(c.server_mldsa) != pa.spki(c.master_mldsa),
                 "%d bytes" % len(c.server_mldsa_bytes))
    d = bo.call("detail", {"activationId": c.activation_id})
    ck.check("back office: PENDING_COMMIT after activation/create", d.get("state") == "PENDING_COMMIT", repr(d))
    # Computed here from the keys on the wire, never read back from the server (the SDK shows it to the
    # user, who compares it with the operator's): powerauth-crypto HybridPublicKeyFingerprint.java.
    fp = pa.fingerprint_upstream(a.suite, pa.pub_bytes(c.device.public_key()), c.activation_id, c.server_pub_bytes,
                                 pa.spki(c.device_mldsa.public_key()) if c.mldsa_alg else None,
                                 c.server_mldsa_bytes if c.mldsa_alg else None)
    ck.check("fingerprint by upstream's formula (HybridPublicKeyFingerprint: SHA3-256(suite || device P-384 X%s || activation id "
             "|| server P-384 X%s), 8 digits) equals the back office's" % (
                 " || device ML-DSA SPKI" if c.mldsa_alg else "", " || server ML-DSA SPKI" if c.mldsa_alg else ""),
             fp == d.get("fingerprint"), "upstream formula %s, back office %s" % (fp, d.get("fingerprint")))

    st = ck.run("activation/status before commit: E2EE activation scope, 80-byte blob, KMAC status MAC verifies",
                lambda: c.read_status())
    if st:
        s = st[0]
        ck.check("status before commit: PENDING_COMMIT, version 4", s["state"] == "PENDING_COMMIT" and s["currentVersion"] == 4, repr(s))
        ck.check("status response is the bare {activationStatus, customObject} after decryption",
                 "activationStatus" in st[1], repr(sorted(st[1])))
        ck.check("status before confirm: flag bit0 (activation confirmation pending) set", s["flags"] & 1 == 1, repr(s))
        ck.check("status CTR_DATA_HASH = KMAC(KEY_MAC_CTR_DATA, CTR_DATA, 'PA4MAC-CTR')",
                 s["ctrDataHash"] == pa.ctr_data_hash(c.keys.mac_ctr_data, c.ctr), s["ctrDataHash"].hex())
        ck.check("status counter byte is 0 before any code", s["ctrByte"] == 0, repr(s))

    # ---- confirm, the SDK's order (mobile-sdk ActivationServiceV4): right after activation/create, while
    # the activation is PENDING_COMMIT; the operator commits afterwards
    late_confirm = not sdk_confirm(ck, c, bo, False, "")
    st = ck.run("activation/status after confirm (still PENDING_COMMIT)", lambda: c.read_status())
    if st and not late_confirm:
        s = st[0]
        ck.check("status after confirm: PENDING_COMMIT, flag bit0 cleared, counter byte 1, CTR_DATA hash follows the SHA3 counter",
                 s["state"] == "PENDING_COMMIT" and s["flags"] & 1 == 0 and s["ctrByte"] == 1
                 and s["ctrDataHash"] == pa.ctr_data_hash(c.keys.mac_ctr_data, c.ctr), repr(s))
    bo.call("commit", {"activationId": c.activation_id})
    if late_confirm:
        confirm_after_commit(ck, c, False, "")
    st = ck.run("activation/status after commit", lambda: c.read_status())
    if st:
        s = st[0]
        ck.check("status after commit: ACTIVE, 0 of 5 failures", s["state"] == "ACTIVE" and s["failedAttempts"] == 0
                 and s["maxFailedAttempts"] == 5, repr(s))
        # (after a refused confirm the server's counter skipped one code: the counter byte is not checked then)
        ck.check("status after commit: flag bit0 cleared, counter byte 1, CTR_DATA hash follows the SHA3 counter",
                 s["flags"] & 1 == 0 and (late_confirm or s["ctrByte"] == 1)
                 and s["ctrDataHash"] == pa.ctr_data_hash(c.keys.mac_ctr_data, c.ctr), repr(s))

    # ---- auth/validate
    for f in ("possession", "possession_knowledge"):
        r = c.validate(f)
        ck.check("auth/validate %s: 200 {status OK}" % f, r.ok() and r.body.get("status") == "OK", repr(r))
    r = c.validate("possession_knowledge", knowledge=os.urandom(32))
    ck.check("auth/validate with a wrong PIN (another knowledge key): 401 PowerAuth error", r.status == 401 and refused_cleanly(r), repr(r))
    st = ck.run("activation/status after the wrong PIN", lambda: c.read_status())
    if st:
        ck.check("status: the wrong PIN counted once (1 failure, 5 max)", st[0]["failedAttempts"] == 1, repr(st[0]))
        ck.check("status counter byte: 3 accepted codes (a failed code does not move the server's counter)",
                 st[0]["ctrByte"] == 3, repr(st[0]))
    c_bad = c.auth("possession", "/pa/auth/validate", b"{}")
    c_bad["X-PowerAuth-Authorization"] = c_bad["X-PowerAuth-Authorization"].replace('pa_auth_code="', 'pa_auth_code="AAAA')
    r = c.post("/pa/v4/auth/validate", b"{}", c_bad)
    ck.check("auth/validate possession with a broken code: 401", r.status == 401 and refused_cleanly(r), repr(r))
    st = ck.run("activation/status after a failed possession-only code", lambda: c.read_status())
    if st:
        ck.check("a failed possession-only code is not counted (powerauth-server: only non-possession failures count)",
                 st[0]["failedAttempts"] == 1, repr(st[0]))
    r = c.validate("possession_knowledge")
    ck.check("auth/validate right PIN after a wrong one: 200", r.ok(), repr(r))
    st = ck.run("activation/status after the right PIN", lambda: c.read_status())
    if st:
        ck.check("status: a knowledge success resets the failures to 0", st[0]["failedAttempts"] == 0, repr(st[0]))
    # ---- /pa/v4/user/info (RESTful-API-Methods.md: activation-scope encryption of an empty request,
    # the answer a bare OIDC claims map; SDK EndpointSpec: ACTIVATION_SCOPE_GENERIC)
    e = c.e2ee("activation", pa.SH1["generic_activation"])
    r = c.post("/pa/v4/user/info", dumps(e.encrypt_request(b"{}")), c.encryption_header("activation"))
    if ck.check("user/info: activation-scope E2EE (sh1 /pa/generic/activation) answered 200", r.ok(), repr(r)):
        claims = json.loads(e.decrypt_response(r.body))
        ck.check("user/info: the claims' sub is the back office's user id", claims.get("sub") == user,
                 repr(claims))
    # offline code over the same counter, checked online: not an upstream endpoint, just a local consistency note
    print("note - offline code for the current counter: %s" % pa.auth_code_offline(
        c.factor_keys("possession_knowledge"), c.ctr, pa.normalized_data("POST", "/operation/authorize/offline",
                                                                          os.urandom(16), b"x", "offline")))

    # ---- E2EE abuse on activation/status (unsigned) -------------------------------------------
    e, body, r = c.status()
    ck.check("activation/status: a fresh request is answered", r.ok(), repr(r))
    r2 = c.post("/pa/v4/activation/status", dumps(body), c.encryption_header("activation"))
    ck.check("activation/status: the same request replayed (same temporaryKeyId + nonce) refused 4xx", refused_cleanly(r2), repr(r2))

    def tamper(enc, e):
        b = bytearray(pa.b64d(enc["encryptedData"]))
        b[-1] ^= 1
        enc["encryptedData"] = pa.b64e(bytes(b))
        return enc
    _, _, r = c.status(mutate=tamper)
    ck.check("activation/status: a flipped ciphertext bit (tag mismatch) refused 4xx", refused_cleanly(r), repr(r))

    def old(enc, e):
        ts = pa.now_ms() - 10 * 60 * 1000
        return e.encrypt_request(b"{}", ts)
    _, _, r = c.status(mutate=old)
    ck.check("activation/status: a request 10 minutes old (correctly sealed) refused 4xx (E2E: ±5 min)", refused_cleanly(r), repr(r))

    def future(enc, e):
        return e.encrypt_request(b"{}", pa.now_ms() + 10 * 60 * 1000)
    _, _, r = c.status(mutate=future)
    ck.check("activation/status: a request 10 minutes ahead refused 4xx", refused_cleanly(r), repr(r))

    def unknown_key(enc, e):
        enc["temporaryKeyId"] = "00000000-0000-4000-8000-000000000000"
        return enc
    _, _, r = c.status(mutate=unknown_key)
    ck.check("activation/status: an unknown temporaryKeyId refused 4xx", refused_cleanly(r), repr(r))

    def same_halves(enc, e):
        e2 = pa.E2EE(e.key, pa.SH1["activation_status"], c.app_key, c.app_secret_raw, e.temporary_key_id,
                     c.activation_id, c.keys.e2ee_sh2, nonce=b"\x07" * 24)
        e2.nonce = b"\x07" * 24
        e2.kc = pa.VERSION.encode() + pa.SH1["activation_status"].encode() + e2.nonce
        return e2.encrypt_request(b"{}")
    _, _, r = c.status(mutate=same_halves)
    ck.check("activation/status: a nonce whose halves are equal refused 4xx (E2E: the halves must differ)",
             refused_cleanly(r), repr(r))

    def app_scope_sh2(enc, e):
        e2 = pa.E2EE(e.key, pa.SH1["activation_status"], c.app_key, c.app_secret_raw, e.temporary_key_id, None)
        return e2.encrypt_request(b"{}")
    _, _, r = c.status(mutate=app_scope_sh2)
    ck.check("activation/status: sealed without the activation id and activation SH2 refused 4xx", refused_cleanly(r), repr(r))
    r = c.post("/pa/v4/activation/status", b'{"temporaryKeyId":', c.encryption_header("activation"))
    ck.check("activation/status: malformed JSON refused 4xx", refused_cleanly(r), repr(r))
    r = c.post("/pa/v4/activation/status", dumps({"temporaryKeyId": c.temp["activation"].kid}), c.encryption_header("activation"))
    ck.check("activation/status: missing encryptedData/nonce/timestamp refused 4xx", refused_cleanly(r), repr(r))

    # ---- keystore, activation scope, with the application-scope MAC key: refused
    ok_act = ck.run("keystore/create activation scope: KEY_MAC_GET_ACT_TEMP_KEY, ES384%s by the activation's server key%s"
                    % (" + " + c.mldsa_alg if c.mldsa_alg else "", "s" if c.mldsa_alg else ""),
                    lambda: c.temporary_key("activation", fresh=True))
    if ok_act and c.mldsa_alg:
        hybrid_jws_checks(ck, c, "activation")
    if ok_act:
        ck.check("keystore/create activation scope: activationId echoed", ok_act.claims.get("activationId") == c.activation_id,
                 repr(ok_act.claims))
    refused = not _try_keystore(c, pa.mac_get_app_temp_key(c.app_secret_raw), scope="activation")
    ck.check("keystore/create activation scope under the application MAC key refused", refused and refused_cleanly(c.last_keystore),
             repr(c.last_keystore))

    # ---- token ----------------------------------------------------------------------------------
    e, _, r = c.signed_encrypted("/pa/v4/token/create", "/pa/token/create", pa.SH1["token_create"],
                                 "possession_knowledge", b"{}")
    ck.check("signed + encrypted request without X-PowerAuth-Encryption accepted (token/create; the activation id "
             "comes from X-PowerAuth-Authorization: End-To-End-Encryption.md V3 box, restful-integration "
             "PowerAuthEncryptionProviderBase, mobile-sdk EndpointSpec FL_FORCE_ENCRYPTION_HEADER only on upgrade/start)",
             r.ok(), repr(r))
    if not r.ok():
        c.signed_enc_header = True
    e, _, r = c.signed_encrypted("/pa/v4/token/create", "/pa/token/create", pa.SH1["token_create"],
                                 "possession_knowledge", b"{}")
    tok = None
    if ck.check("token/create (E2EE sh1 /pa/token/create, possession_knowledge over the encrypted body): 200", r.ok(), repr(r)):
        obj = json.loads(e.decrypt_response(r.body))
        ck.check("token/create decrypted response is the bare {tokenId, tokenSecret} (mobile SDK)",
                 "tokenId" in obj and "tokenSecret" in obj, repr(sorted(obj)))
        inner = obj.get("responseObject", obj)
        tok = (inner["tokenId"], pa.b64d(inner["tokenSecret"]))
        ck.check("token/create: the token secret is 32 bytes (Constants.h)", len(tok[1]) == 32, len(tok[1]))
    if tok:
        # restful-integration docs/RESTful-API-Methods.md, POST /pa/v4/activation/detail: a PowerAuth
        # token (POSSESSION_KNOWLEDGE or POSSESSION_BIOMETRY), "Request body: none (encrypted via
        # ACTIVATION_SCOPE)", response ObjectResponse<ActivationDetailResponse> (encrypted).
        e = c.e2ee("activation", pa.SH1["generic_activation"])
        enc = e.encrypt_request(b"{}")
        h = {"X-PowerAuth-Token": pa.token_header(*tok)}
        h.update(c.encryption_header("activation"))
        r = c.post("/pa/v4/activation/detail", dumps(enc), h)
        if r.status == 404:
            # upstream has it (restful-integration docs/RESTful-API-Methods.md, POST /pa/v4/activation/detail)
            ck.check("token-checked call /pa/v4/activation/detail exists", False, repr(r))
        elif ck.check("token-checked call (activation/detail) with a fresh KMAC digest", r.ok(), repr(r)):
            obj = json.loads(e.decrypt_response(r.body))
            ro = obj.get("responseObject", obj) if isinstance(obj, dict) else {}
            ck.check("activation/detail: the decrypted ObjectResponse names this activation",
                     ro.get("activationId") == c.activation_id and "activationName" in ro, repr(obj))
            r = c.post("/pa/v4/activation/detail", dumps(enc), h)
            ck.check("activation/detail: the same token header again (nonce replay) refused 4xx",
                     refused_cleanly(r), repr(r))
    e, _, r = c.signed_encrypted("/pa/v4/token/create", "/pa/token/create", pa.SH1["token_create"],
                                 "possession_knowledge", b"{}", mutate=tamper)
    ck.check("token/create with a broken E2EE body and a right code refused 4xx", refused_cleanly(r), repr(r))
    st = ck.run("activation/status after the broken token/create", lambda: c.read_status())
    if st:
        ck.check("the broken E2EE body was not counted as a failure", st[0]["failedAttempts"] == 0, repr(st[0]))
    if tok:
        r = c.signed_plain("/pa/v4/token/remove", "/pa/token/remove", "possession", {"requestObject": {"tokenId": tok[0]}})
        ck.check("token/remove accepts the upstream envelope {requestObject: {tokenId}} (Standard-RESTful-API.md V4; "
                 "mobile-sdk EndpointSpec: unencrypted, not FL_NOT_WRAPPED)", r.ok(), repr(r))
        if not r.ok():
            r = c.signed_plain("/pa/v4/token/remove", "/pa/token/remove", "possession", {"tokenId": tok[0]})
        ro = (r.body or {}).get("responseObject") or {}
        ck.check("token/remove (possession): 200 {status OK, responseObject {tokenId}}", r.ok() and ro.get("tokenId") == tok[0], repr(r))
        r = c.signed_plain("/pa/v4/token/remove", "/pa/token/remove", "possession", {"requestObject": {"tokenId": tok[0]}})
        r2 = c.signed_plain("/pa/v4/token/remove", "/pa/token/remove", "possession", {"tokenId": tok[0]})
        print("note - token/remove of the removed token again: %r / %r" % (r, r2))

    # ---- vault ----------------------------------------------------------------------------------
    for kid, mine in (("KEK_DEVICE_PRIVATE", c.keys.kek_device_private), ("KDK_APP_VAULT_2FA", c.keys.kdk_app_vault_2fa),
                      ("KDK_APP_VAULT_KNOWLEDGE", c.keys.kdk_app_vault_knowledge)):
        e, _, r = c.signed_encrypted("/pa/v4/vault/unlock", "/pa/vault/unlock", pa.SH1["vault_unlock"], "possession_knowledge",
                                     dumps({"keyIdentifier": kid, "reason": "FETCH_ENCRYPTION_KEY"}))
        if ck.check("vault/unlock %s: 200" % kid, r.ok(), repr(r)):
            obj = json.loads(e.decrypt_response(r.body))
            got = obj.get("vaultEncryptionKey") or (obj.get("responseObject") or {}).get("vaultEncryptionKey")
            ck.check("vault/unlock %s: the key equals our KDF of KDK_VAULT" % kid, got is not None and pa.b64d(got) == mine,
                     repr(sorted(obj)))
    # replay of a whole accepted signed + encrypted request (same body, same authorization header)
    e = c.e2ee("activation", pa.SH1["vault_unlock"])
    body = dumps(e.encrypt_request(dumps({"keyIdentifier": "KDK_APP_VAULT_2FA", "reason": "FETCH_ENCRYPTION_KEY"})))
    h = c.auth("possession_knowledge", "/pa/vault/unlock", body)
    if c.signed_enc_header:
        h.update(c.encryption_header("activation"))
    r1 = c.post("/pa/v4/vault/unlock", body, h)
    r2 = c.post("/pa/v4/vault/unlock", body, h)
    ck.check("vault/unlock replayed verbatim: the first answered, the replay refused 4xx", r1.ok() and refused_cleanly(r2),
             "%r / %r" % (r1, r2))
    e, _, r = c.signed_encrypted("/pa/v4/vault/unlock", "/pa/vault/unlock", pa.SH1["vault_unlock"], "possession_knowledge",
                                 dumps({"keyIdentifier": "KEK_DEVICE_PRIVATE", "reason": "FETCH_ENCRYPTION_KEY"}),
                                 mutate=tamper)
    ck.check("vault/unlock with a broken E2EE body and a right code refused 4xx", refused_cleanly(r), repr(r))
    e, _, r = c.signed_encrypted("/pa/v4/vault/unlock", "/pa/vault/unlock", pa.SH1["vault_unlock"], "possession_knowledge",
                                 dumps({"keyIdentifier": "KEK_DEVICE_PRIVATE", "reason": "FETCH_ENCRYPTION_KEY"}),
                                 mutate=old)
    ck.check("vault/unlock sealed 10 minutes ago, right code: refused 4xx", refused_cleanly(r), repr(r))
    e, _, r = c.signed_encrypted("/pa/v4/vault/unlock", "/pa/vault/unlock", pa.SH1["vault_unlock"], "possession_knowledge",
                                 dumps({"keyIdentifier": "NO_SUCH_KEY", "reason": "FETCH_ENCRYPTION_KEY"}))
    ck.check("vault/unlock of an unknown keyIdentifier refused 4xx", refused_cleanly(r), repr(r))
    st = ck.run("activation/status after the refused vault requests", lambda: c.read_status())
    if st:
        ck.check("refused E2EE bodies and replays under a right code count no failure", st[0]["failedAttempts"] == 0, repr(st[0]))
    r = c.validate("possession_knowledge")
    ck.check("auth/validate after the refused requests: the client's counter is still inside the look-ahead window",
             r.ok(), repr(r))
    e, _, r = c.signed_encrypted("/pa/v4/vault/unlock", "/pa/vault/unlock", pa.SH1["vault_unlock"], "possession",
                                 dumps({"keyIdentifier": "KEK_DEVICE_PRIVATE", "reason": "FETCH_ENCRYPTION_KEY"}))
    # upstream (powerauth-server VaultUnlockServiceBehavior): a set other than possession_knowledge is refused
    # before the code is verified (400 ERR_SECURE_VAULT through SecureVaultService), so only a clean 4xx is asked
    ck.check("vault/unlock with a possession-only code refused 4xx (upstream: possession_knowledge only)",
             refused_cleanly(r), repr(r))

    # ---- password change --------------------------------------------------------------------------
    old_k = c.knowledge
    other = "EC_P384" if a.suite in pa.HYBRID else "EC_P384_ML_L3"
    try:
        c.dynamic_key("/pa/v4/password/change", "/pa/password/change", pa.SH1["password_change"], ss_suite=other)
        ck.check("password/change with a sharedSecretRequest in suite %s refused 4xx" % other, False, "accepted")
    except ProtocolFailure as e:
        ck.check("password/change with a sharedSecretRequest in suite %s refused 4xx" % other, "HTTP 4" in str(e), str(e))
    st = ck.run("activation/status after the wrong-suite password/change", lambda: c.read_status())
    if st:
        print("note - failures after the wrong-suite password/change (right code): %d" % st[0]["failedAttempts"])
    new_k = ck.run("password/change (possession_knowledge, E2EE sh1 /pa/password/change, SharedSecret JSON)",
                   lambda: c.dynamic_key("/pa/v4/password/change", "/pa/password/change", pa.SH1["password_change"]))
    if new_k:
        r = c.validate("possession_knowledge", knowledge=new_k)
        ck.check("auth/validate with the new knowledge key: 200", r.ok(), repr(r))
        r = c.validate("possession_knowledge", knowledge=old_k)
        ck.check("auth/validate with the old knowledge key after the new one was used: 401", r.status == 401, repr(r))
        c.knowledge = new_k
        r = c.validate("possession_knowledge")
        ck.check("auth/validate with the new key again: 200 (resets the failure)", r.ok(), repr(r))

    # ---- biometry ---------------------------------------------------------------------------------
    bio = ck.run("biometry/add (possession_knowledge, E2EE sh1 /pa/biometry/add, SharedSecret JSON)",
                 lambda: c.dynamic_key("/pa/v4/biometry/add", "/pa/biometry/add", pa.SH1["biometry_add"]))
    if bio:
        c.biometry = bio
        st = ck.run("activation/status after biometry/add", lambda: c.read_status())
        if st:
            ck.check("status flag bit3 (biometry enabled) set after biometry/add", st[0]["flags"] & 8 == 8, repr(st[0]))
        r = c.validate("possession_biometry")
        ck.check("auth/validate possession_biometry with the new biometry key: 200", r.ok(), repr(r))
        r = c.validate("possession_knowledge_biometry")
        ck.check("auth/validate possession_knowledge_biometry: 200", r.ok(), repr(r))
        r = c.signed_plain("/pa/v4/biometry/remove", "/pa/biometry/remove", "possession", {"requestObject": {}})
        ck.check("biometry/remove (possession): 200", r.ok(), repr(r))
        r = c.validate("possession_biometry")
        ck.check("auth/validate possession_biometry after biometry/remove: 401", r.status == 401, repr(r))
        r = c.validate("possession_knowledge")
        ck.check("auth/validate possession_knowledge after biometry/remove: 200", r.ok(), repr(r))

    # ---- remove -------------------------------------------------------------------------------------
    r = c.signed_plain("/pa/v4/activation/remove", "/pa/activation/remove", "possession", {"requestObject": {}})
    ck.check("activation/remove with a possession-only code refused 401 (2FA)", r.status == 401 and refused_cleanly(r), repr(r))
    r = c.signed_plain("/pa/v4/activation/remove", "/pa/activation/remove", "possession_knowledge", {"requestObject": {}})
    ck.check("activation/remove possession_knowledge: 200 with the activationId",
             r.ok() and (r.body.get("responseObject") or {}).get("activationId") == c.activation_id, repr(r))
    d = bo.call("detail", {"activationId": c.activation_id})
    ck.check("back office: REMOVED after activation/remove", d.get("state") == "REMOVED", repr(d))
    r = c.validate("possession_knowledge")
    ck.check("auth/validate on a removed activation: 401", r.status == 401, repr(r))

    print("note - decrypted response keys seen: %s" % json.dumps(c.last_shapes, sort_keys=True))

    # ---- blocking ------------------------------------------------------------------------------------
    b = Client(a.url, a.config, a.suite)
    init = bo.call("init", {"userId": "interop4-block"})
    if ck.run("second activation for the blocking test", lambda: b.activate(init["activationCode"])) is not None:
        late = not sdk_confirm(ck, b, bo, True, "second activation: ")
        bo.call("commit", {"activationId": b.activation_id})
        if late:
            confirm_after_commit(ck, b, True, "second activation: ")
        st = ck.run("activation/status after the confirm with biometry", lambda: b.read_status())
        if st:
            ck.check("confirm with enableBiometry: status flag bit3 (biometry enabled) set", st[0]["flags"] & 8 == 8, repr(st[0]))
        r = b.validate("possession_biometry")
        ck.check("biometry turned on at confirm: possession_biometry with the initial auth/biometry key accepted",
                 r.ok(), repr(r))
        codes = []
        for _ in range(5):
            codes.append(b.validate("possession_knowledge", knowledge=os.urandom(32)).status)
        d = bo.call("detail", {"activationId": b.activation_id})
        ck.check("5 wrong PINs: all 401, back office BLOCKED with 5 failures",
                 codes == [401] * 5 and d.get("state") == "BLOCKED" and d.get("failedAttempts") == 5, "%r %r" % (codes, d))
        r = b.validate("possession_knowledge")
        ck.check("blocked: the right PIN is refused 401", r.status == 401, repr(r))
        st = ck.run("activation/status of the blocked activation (activation-scope key for a BLOCKED activation)",
                    lambda: b.read_status())
        if st:
            ck.check("status: BLOCKED, 5 of 5 failures", st[0]["state"] == "BLOCKED" and st[0]["failedAttempts"] == 5, repr(st[0]))
    return ck


def sdk_confirm(ck, c, bo, biometry, label):
    """activation/confirm while PENDING_COMMIT, as the SDK sends it; True when accepted."""
    r = c.signed_plain("/pa/v4/activation/confirm", "/pa/activation/confirm", "possession_knowledge",
                       {"requestObject": {"enableBiometry": biometry}})
    ok = ck.check("%sactivation/confirm {requestObject: {enableBiometry: %s}} possession_knowledge while PENDING_COMMIT "
                  "(the SDK's order: create, confirm, the operator's commit): 200" % (label, str(biometry).lower()), r.ok(), repr(r))
    if not ok:
        d = bo.call("detail", {"activationId": c.activation_id})
        print("note - after the refused confirm: back office %s, %s failure(s); the client confirms again after the "
              "commit only to reach the later steps" % (d.get("state"), d.get("failedAttempts")))
    return ok


def confirm_after_commit(ck, c, biometry, label):
    r = c.signed_plain("/pa/v4/activation/confirm", "/pa/activation/confirm", "possession_knowledge",
                       {"requestObject": {"enableBiometry": biometry}})
    ck.check("%sactivation/confirm after the commit (fallback): 200" % label, r.ok(), repr(r))


def hybrid_jws_checks(ck, c, scope):
    """The client's own verifier on the server's last hybrid JWS: it verifies as sent; without its
    ML-DSA signature, with an altered ML-DSA signature, with the ML-DSA signature under another
    level's alg, or checked against another ML-DSA key, it is refused (AeadEncryptorFactory
    _BuildKeyList: a hybrid key is two keys, each must verify)."""
    sc, text = c.last_jws
    jws = json.loads(text)
    ec_pub, ml_pub = c.jws_keys(scope)
    algs = sorted(json.loads(pa.b64u_d(s["protected"])).get("alg") for s in jws.get("signatures", []))
    ck.check("keystore/create %s scope: the JWS carries exactly ES384 and %s signatures" % (scope, c.mldsa_alg),
             algs == sorted(["ES384", c.mldsa_alg]), repr(algs))
    es = [s for s in jws["signatures"] if json.loads(pa.b64u_d(s["protected"])).get("alg") == "ES384"]
    ml = [s for s in jws["signatures"] if json.loads(pa.b64u_d(s["protected"])).get("alg") != "ES384"]
    if not es or not ml:
        return
    sig = bytearray(pa.b64u_d(ml[0]["signature"]))
    sig[len(sig) // 2] ^= 0x10
    other = "ML-DSA-87" if c.mldsa_alg == "ML-DSA-65" else "ML-DSA-65"
    cls = {"ML-DSA-65": pa.mldsa.MLDSA65PrivateKey, "ML-DSA-87": pa.mldsa.MLDSA87PrivateKey}[c.mldsa_alg]
    cases = [
        ("the ML-DSA signature removed", {"payload": jws["payload"], "signatures": es}, ml_pub),
        ("the ML-DSA signature altered (one bit)", {"payload": jws["payload"],
                                                    "signatures": es + [dict(ml[0], signature=pa.b64u_e(bytes(sig)))]}, ml_pub),
        ("the ML-DSA signature relabelled %s" % other, {"payload": jws["payload"], "signatures": es + [
            dict(ml[0], protected=pa.b64u_e(json.dumps({"alg": other}).encode()))]}, ml_pub),
        ("the ES384 signature removed", {"payload": jws["payload"], "signatures": ml}, ml_pub),
        ("its ML-DSA signature checked against another %s key" % c.mldsa_alg, jws, cls.generate().public_key()),
    ]
    for what, bad, key in cases:
        try:
            pa.jws_json_verify(bad, ec_pub, key, c.suite)
            refused = False
        except (ValueError, KeyError):
            refused = True
        ck.check("the client refuses the %s-scope temporary key JWS with %s" % (scope, what), refused)


def wrong_suite_checks(ck, c, suite):
    """keystore/create with a sharedSecretRequest in another suite than the application's: 4xx."""
    for other in pa.SUITES:
        if other == suite:
            continue
        claims = upstream_claims(c.app_key, None, pa.b64e(os.urandom(32)), pa.SharedSecretClient(other).request())
        if c.add_iat_exp:  # only when the upstream form itself was refused (a failed check of its own)
            claims = with_iat_exp(claims)
        r = c.post("/pa/v4/keystore/create", dumps({"requestObject": {"jwt": pa.jwt_hs384(
            claims, pa.mac_get_app_temp_key(c.app_secret_raw), encode=dumps)}}))
        ck.check("keystore/create with a sharedSecretRequest in suite %s (application is %s): refused 4xx" % (other, suite),
                 refused_cleanly(r), repr(r))
    # the right suite name, but only the DHKEM key (a hybrid suite needs two) or an extra key (EC_P384 needs one)
    req = pa.SharedSecretClient(suite).request()
    if suite in pa.HYBRID:
        req["encapsulationKeys"] = req["encapsulationKeys"][:1]
        what = "only the DHKEM encapsulation key"
    else:
        req["encapsulationKeys"] = req["encapsulationKeys"] * 2
        what = "two encapsulation keys"
    claims = upstream_claims(c.app_key, None, pa.b64e(os.urandom(32)), req)
    if c.add_iat_exp:
        claims = with_iat_exp(claims)
    r = c.post("/pa/v4/keystore/create", dumps({"requestObject": {"jwt": pa.jwt_hs384(
        claims, pa.mac_get_app_temp_key(c.app_secret_raw), encode=dumps)}}))
    ck.check("keystore/create in suite %s with %s: refused 4xx" % (suite, what), refused_cleanly(r), repr(r))


def _try_keystore(c, key, scope="application"):
    try:
        c.temporary_key(scope, jwt_key=key, fresh=True)
        return True
    except ProtocolFailure:
        return False


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cmd", choices=["scenario"])
    p.add_argument("--url", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--admin-token", required=True)
    p.add_argument("--known-differences")
    p.add_argument("--suite", default=pa.SUITE, choices=pa.SUITES)
    p.add_argument("--dialect", choices=dia.DIALECTS, default=dia.current(),
                   help="write JSON and headers as the Android or iOS SDK does (dialect.py); default $INTEROP_DIALECT or plain")
    a = p.parse_args()
    dia.set_dialect(a.dialect)
    print("dialect: %s" % a.dialect)
    try:
        ck = scenario(a)
    except Exception as e:  # an unexpected crash is one failed check, never a silent pass
        ck = Checks({})
        ck.failed = 1
        print("FAIL - v4 scenario crashed: %s: %s" % (type(e).__name__, e))
        import traceback
        traceback.print_exc()
        print("interop4: 0 passed, 1 failed")
        return 1
    if ck.known_count:
        print("known differences: %d (Tests/interop/known-differences.txt)" % ck.known_count)
    print("interop4: %d passed, %d failed" % (ck.passed, ck.failed))
    return 0 if ck.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

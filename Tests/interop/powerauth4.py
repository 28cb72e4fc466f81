#!/usr/bin/env python3
"""PowerAuth protocol V4 cryptography (suites EC_P384, EC_P384_ML_L3, EC_P384_ML_L5), written from the
upstream documents and reference code alone (README.md in this folder, "Protocol V4", lists every
source and commit).

    python3 powerauth4.py selftest DIR     # DIR holds the official V4 vector files

Primitives: KMAC-256 / cSHAKE-256 (NIST SP 800-185) on an own Keccak-f[1600], checked against
hashlib's SHAKE-256 and SHA3 and, where pycryptodome is installed, its KMAC256; SHA3-256/384
(hashlib); P-384 ECDH/ECDSA and HKDF-SHA384 (`cryptography`); AES-256-CTR (`cryptography`);
ML-KEM-768/1024 and ML-DSA-65/87 (`cryptography` 45 or newer, whose wheel bundles OpenSSL 3.5).
"""
import base64
import hashlib
import hmac
import json
import os
import struct
import sys
import time

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.exceptions import InvalidSignature

try:  # ML-KEM / ML-DSA: only the hybrid suites need them
    from cryptography.hazmat.primitives.asymmetric import mldsa, mlkem
except ImportError:  # pragma: no cover - reported by hybrid_available()
    mldsa = mlkem = None

VERSION = "4.0"
SUITE = "EC_P384"

# Cryptography-Algorithms.md, Shared-Secret-Derivation.md, mobile-sdk SharedSecret.cpp
# (ISharedSecret::getInstance: DHKEM(P-384) first, then ML-KEM), SDK-Configuration.md (key ids):
# suite -> (ML-KEM parameter set, ML-DSA parameter set / JWS alg, configuration key id).
HYBRID = {
    "EC_P384_ML_L3": ("ML-KEM-768", "ML-DSA-65", 0x03),
    "EC_P384_ML_L5": ("ML-KEM-1024", "ML-DSA-87", 0x04),
}
SUITES = (SUITE,) + tuple(HYBRID)


def hybrid_available():
    return mlkem is not None and mldsa is not None


# ------------------------------------------------------------------------------------ encodings
def b64e(b):
    return base64.b64encode(b).decode("ascii")


def b64d(s):
    return base64.b64decode(s, validate=True)


def b64u_e(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode("ascii")


def b64u_d(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def u32(n):
    return struct.pack(">I", n)


def lv(x):
    """concatWithSizes element: u32be(len) || bytes (Basic-definitions.md, ByteUtils)."""
    if x is None:
        return u32(0)
    if isinstance(x, str):
        x = x.encode("utf-8")
    return u32(len(x)) + x


def now_ms():
    return int(time.time() * 1000)


# ------------------------------------------------------------------------------------ Keccak / KMAC
_RC = [
    0x0000000000000001, 0x0000000000008082, 0x800000000000808A, 0x8000000080008000,
    0x000000000000808B, 0x0000000080000001, 0x8000000080008081, 0x8000000000008009,
    0x000000000000008A, 0x0000000000000088, 0x0000000080008009, 0x000000008000000A,
    0x000000008000808B, 0x800000000000008B, 0x8000000000008089, 0x8000000000008003,
    0x8000000000008002, 0x8000000000000080, 0x000000000000800A, 0x800000008000000A,
    0x8000000080008081, 0x8000000000008080, 0x0000000080000001, 0x8000000080008008,
]
_ROT = [
    [0, 36, 3, 41, 18], [1, 44, 10, 45, 2], [62, 6, 43, 15, 61], [28, 55, 25, 21, 56], [27, 20, 39, 8, 14],
]
_M = (1 << 64) - 1


def _keccak_f(a):
    for rc in _RC:
        c = [a[x] ^ a[x + 5] ^ a[x + 10] ^ a[x + 15] ^ a[x + 20] for x in range(5)]
        d = [c[(x - 1) % 5] ^ (((c[(x + 1) % 5] << 1) | (c[(x + 1) % 5] >> 63)) & _M) for x in range(5)]
        a = [a[i] ^ d[i % 5] for i in range(25)]
        b = [0] * 25
        for x in range(5):
            for y in range(5):
                r = _ROT[x][y]
                v = a[x + 5 * y]
                b[y + 5 * ((2 * x + 3 * y) % 5)] = ((v << r) | (v >> (64 - r))) & _M if r else v
        a = [b[i] ^ ((~b[(i % 5 + 1) % 5 + 5 * (i // 5)]) & b[(i % 5 + 2) % 5 + 5 * (i // 5)]) for i in range(25)]
        a[0] ^= rc
    return a


def _keccak(rate, msg, pad, outlen):
    st = [0] * 25
    data = bytearray(msg)
    data.append(pad)
    while len(data) % rate:
        data.append(0)
    data[-1] |= 0x80
    for off in range(0, len(data), rate):
        blk = data[off:off + rate]
        for i in range(rate // 8):
            st[i] ^= int.from_bytes(blk[8 * i:8 * i + 8], "little")
        st = _keccak_f(st)
    out = bytearray()
    while True:
        for i in range(rate // 8):
            out += st[i].to_bytes(8, "little")
        if len(out) >= outlen:
            return bytes(out[:outlen])
        st = _keccak_f(st)


def _left_encode(x):
    n = max(1, (x.bit_length() + 7) // 8)
    return bytes([n]) + x.to_bytes(n, "big")


def _right_encode(x):
    n = max(1, (x.bit_length() + 7) // 8)
    return x.to_bytes(n, "big") + bytes([n])


def _encode_string(s):
    return _left_encode(8 * len(s)) + s


def _bytepad(x, w):
    z = _left_encode(w) + x
    return z + b"\x00" * (-len(z) % w)


def cshake256(data, length, n=b"", s=b""):
    if not n and not s:
        return _keccak(136, data, 0x1F, length)  # = SHAKE256
    return _keccak(136, _bytepad(_encode_string(n) + _encode_string(s), 136) + data, 0x04, length)


def kmac256(key, data, length, custom=b""):
    """KMAC256(K, X, L, S) of NIST SP 800-185 section 4, L in bytes."""
    if isinstance(custom, str):
        custom = custom.encode("utf-8")
    x = _bytepad(_encode_string(key), 136) + data + _right_encode(8 * length)
    return cshake256(x, length, b"KMAC", custom)


def sha3_256(b):
    return hashlib.sha3_256(b).digest()


def sha3_384(b):
    return hashlib.sha3_384(b).digest()


# ------------------------------------------------------------------------------------ KDF and key tree
def kdf(key, label, diversifier=b"", length=32):
    """KDF.derive: KMAC256(key, diversifier, L, "PA4KDF:" + label) (Key-derivation.md V4,
    mobile-sdk v4/PowerAuthKDF.cpp; vectors v4-kdf.json)."""
    return kmac256(key, diversifier, length, "PA4KDF:" + label)


def kdf_password(password, salt, length=32):
    """KDF.derivePassword: KMAC256(UTF-8 password, salt, L, "PA4PBKDF") (pbkdf-v4.json)."""
    return kmac256(password.encode("utf-8"), salt, length, "PA4PBKDF")


class ActivationKeys:
    """The V4 key tree under KEY_ACTIVATION_SECRET (Key-derivation.md, KeyLabel.java)."""

    def __init__(self, activation_secret):
        auth = kdf(activation_secret, "auth")
        self.possession = kdf(auth, "auth/possession")
        self.knowledge = kdf(auth, "auth/knowledge")
        self.biometry = kdf(auth, "auth/biometry")
        vault = kdf(activation_secret, "vault")
        self.kek_device_private = kdf(vault, "vault/kek-device-private")
        self.kdk_app_vault_knowledge = kdf(vault, "vault/kdk-app-vault-knowledge")
        self.kdk_app_vault_2fa = kdf(vault, "vault/kdk-app-vault-2fa")
        util = kdf(activation_secret, "util")
        self.mac_ctr_data = kdf(util, "util/mac/ctr-data")
        self.mac_status = kdf(util, "util/mac/status")
        self.mac_get_act_temp_key = kdf(util, "util/mac/get-act-temp-key")
        self.mac_personalized_data = kdf(util, "util/mac/personalized-data")
        self.e2ee_sh2 = kdf(util, "util/key-e2ee-sh2")


def mac_get_app_temp_key(app_secret_raw):
    return kdf(app_secret_raw, "util/mac/get-app-temp-key")


# ------------------------------------------------------------------------------------ P-384
CURVE = ec.SECP384R1()


def p384_generate():
    return ec.generate_private_key(CURVE)


def pub_bytes(pub, compressed=False):
    fmt = serialization.PublicFormat.CompressedPoint if compressed else serialization.PublicFormat.UncompressedPoint
    return pub.public_bytes(serialization.Encoding.X962, fmt)


def pub_from_bytes(b):
    if len(b) not in (49, 97):
        raise ValueError("P-384 point must be 49 or 97 bytes, got %d" % len(b))
    return ec.EllipticCurvePublicKey.from_encoded_point(CURVE, b)


def priv_from_scalar(b):
    return ec.derive_private_key(int.from_bytes(b, "big"), CURVE)


def ecdh(priv, pub):
    return priv.exchange(ec.ECDH(), pub)


def es384_verify(pub, data, sig_rs):
    if len(sig_rs) != 96:
        raise ValueError("ES384 signature must be 96 bytes (r||s), got %d" % len(sig_rs))
    der = encode_dss_signature(int.from_bytes(sig_rs[:48], "big"), int.from_bytes(sig_rs[48:], "big"))
    try:
        pub.verify(der, data, ec.ECDSA(hashes.SHA384()))
    except InvalidSignature:
        raise ValueError("ES384 signature does not verify")


def es384_sign(priv, data):
    r, s = decode_dss_signature(priv.sign(data, ec.ECDSA(hashes.SHA384())))
    return r.to_bytes(48, "big") + s.to_bytes(48, "big")


# ------------------------------------------------------------------------------------ HPKE DHKEM(P-384)
def _hmac384(k, m):
    return hmac.new(k, m, hashlib.sha384).digest()


def _hkdf_extract(salt, ikm):
    return _hmac384(salt or b"\x00" * 48, ikm)


def _hkdf_expand(prk, info, length):
    out, t, i = b"", b"", 1
    while len(out) < length:
        t = _hmac384(prk, t + info + bytes([i]))
        out += t
        i += 1
    return out[:length]


def _labeled_extract(suite_id, salt, label, ikm):
    return _hkdf_extract(salt, b"HPKE-v1" + suite_id + label + ikm)


def _labeled_expand(suite_id, prk, label, info, length):
    return _hkdf_expand(prk, struct.pack(">H", length) + b"HPKE-v1" + suite_id + label + info, length)


KEM_SUITE = b"KEM" + struct.pack(">H", 0x0011)
HPKE_SUITE = b"HPKE" + struct.pack(">HHH", 0x0011, 0x0002, 0xFFFF)
DHKEM_LABEL = b"DHKEM-P384"


def _dhkem_shared(dh, enc, pk_rm):
    """RFC 9180 4.1 ExtractAndExpand with kem_context = enc || pkRm, Nsecret = 48."""
    eae_prk = _labeled_extract(KEM_SUITE, b"", b"eae_prk", dh)
    return _labeled_expand(KEM_SUITE, eae_prk, b"shared_secret", enc + pk_rm, 48)


def _hpke_export(shared_secret, info, exporter_context, length):
    """RFC 9180 5.1 KeySchedule (mode_base, empty psk) then 5.3 Export."""
    psk_id_hash = _labeled_extract(HPKE_SUITE, b"", b"psk_id_hash", b"")
    info_hash = _labeled_extract(HPKE_SUITE, b"", b"info_hash", info)
    ctx = b"\x00" + psk_id_hash + info_hash
    secret = _labeled_extract(HPKE_SUITE, shared_secret, b"secret", b"")
    exporter_secret = _labeled_expand(HPKE_SUITE, secret, b"exp", ctx, 48)
    return _labeled_expand(HPKE_SUITE, exporter_secret, b"sec", exporter_context, length)


def dhkem_p384_encap(pk_r_bytes, eph=None):
    """Server side: (enc, ss) for the device's encapsulation key (java DhKem: HPKE base mode,
    info and exporter context "DHKEM-P384", 48-byte export)."""
    pk_r = pub_from_bytes(pk_r_bytes)
    eph = eph or p384_generate()
    enc = pub_bytes(eph.public_key())
    ss = _dhkem_shared(ecdh(eph, pk_r), enc, pub_bytes(pk_r))
    return enc, _hpke_export(ss, DHKEM_LABEL, DHKEM_LABEL, 48)


def dhkem_p384_decap(sk_r, enc):
    pk_e = pub_from_bytes(enc)
    ss = _dhkem_shared(ecdh(sk_r, pk_e), pub_bytes(pk_e), pub_bytes(sk_r.public_key()))
    return _hpke_export(ss, DHKEM_LABEL, DHKEM_LABEL, 48)


def combine_shared_secret(secrets, salt, suite=SUITE):
    """Shared-Secret-Derivation.md, mobile-sdk SharedSecret.cpp calculateSharedSecret:
    KMAC256(salt, u32be(1) || LV(ss_1)..LV(ss_n) || LV("shared-secret/SUITE") || LV("4.0"), 32, "KDF")."""
    if len(salt) != 32:
        raise ValueError("shared-secret salt must be 32 bytes, got %d" % len(salt))
    z = b"".join(lv(s) for s in secrets)
    x = u32(1) + z + lv("shared-secret/" + suite) + lv(VERSION)
    return kmac256(salt, x, 32, "KDF")


# ------------------------------------------------------------------------------------ ML-KEM / ML-DSA
def _mlkem_private_class(name):
    return {"ML-KEM-768": mlkem.MLKEM768PrivateKey, "ML-KEM-1024": mlkem.MLKEM1024PrivateKey}[name]


def _mlkem_public_class(name):
    return {"ML-KEM-768": mlkem.MLKEM768PublicKey, "ML-KEM-1024": mlkem.MLKEM1024PublicKey}[name]


def _mldsa_public_class(name):
    return {"ML-DSA-65": mldsa.MLDSA65PublicKey, "ML-DSA-87": mldsa.MLDSA87PublicKey}[name]


def spki(pub):
    """X.509 SubjectPublicKeyInfo DER: how V4 carries ML-KEM encapsulation keys and ML-DSA public
    keys (design digest section 1; mobile-sdk KEY_FORMAT_DEFAULT; the SDK's client vectors'
    `pqcEncapsulationKey` "MIIEsj..." and the Java test's `publicKeyMlDsa65` "MIIHsj...")."""
    return pub.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def mlkem_public_from_spki(name, der):
    pub = serialization.load_der_public_key(der)
    if not isinstance(pub, _mlkem_public_class(name)):
        raise ValueError("not an %s SubjectPublicKeyInfo" % name)
    return pub


def mldsa_public_from_spki(name, der):
    try:
        pub = serialization.load_der_public_key(der)
    except (ValueError, TypeError) as e:
        raise ValueError("%s public key is not a SubjectPublicKeyInfo: %s" % (name, e))
    if not isinstance(pub, _mldsa_public_class(name)):
        raise ValueError("not an %s SubjectPublicKeyInfo (%s)" % (name, type(pub).__name__))
    return pub


def mldsa_verify(pub, data, sig):
    """Pure ML-DSA with an empty context (FIPS 204; design digest section 6)."""
    try:
        pub.verify(sig, data)
    except InvalidSignature:
        raise ValueError("ML-DSA signature does not verify")


class SharedSecretClient:
    """The client's half of the key agreement for SUITE or a hybrid suite: request JSON, then the
    secret from the response (mobile-sdk SharedSecret.cpp: one key pair per KEM, DHKEM(P-384) then
    ML-KEM; the ML-KEM encapsulation key as SPKI DER, its encapsulated key the raw ciphertext)."""

    def __init__(self, suite=SUITE):
        if suite not in SUITES:
            raise ValueError("unknown suite %r" % suite)
        self.suite = suite
        self.sk = p384_generate()
        self.kem_sk = _mlkem_private_class(HYBRID[suite][0]).generate() if suite in HYBRID else None

    def request(self):
        keys = [b64e(pub_bytes(self.sk.public_key()))]
        if self.kem_sk is not None:
            keys.append(b64e(spki(self.kem_sk.public_key())))
        return {"algorithm": self.suite, "encapsulationKeys": keys}

    def finish(self, response):
        if not isinstance(response, dict):
            raise ValueError("sharedSecretResponse is not an object")
        keys = response.get("encapsulatedKeys")
        n = 2 if self.kem_sk is not None else 1
        if not isinstance(keys, list) or len(keys) != n:
            raise ValueError("encapsulatedKeys must hold exactly %d key(s) for %s: %r" % (n, self.suite, keys))
        salt = b64d(response.get("salt", ""))
        secrets = [dhkem_p384_decap(self.sk, b64d(keys[0]))]
        if self.kem_sk is not None:
            ct = b64d(keys[1])
            want = {"ML-KEM-768": 1088, "ML-KEM-1024": 1568}[HYBRID[self.suite][0]]
            if len(ct) != want:
                raise ValueError("%s ciphertext must be %d bytes, got %d" % (HYBRID[self.suite][0], want, len(ct)))
            secrets.append(self.kem_sk.decapsulate(ct))
        return combine_shared_secret(secrets, salt, self.suite)


def shared_secret_server(request):
    """The server's half (used by the self-test round trip)."""
    suite = request.get("algorithm")
    keys = request.get("encapsulationKeys", [])
    if suite not in SUITES or len(keys) != (2 if suite in HYBRID else 1):
        raise ValueError("bad sharedSecretRequest")
    enc, ss = dhkem_p384_encap(b64d(keys[0]))
    out, secrets = [b64e(enc)], [ss]
    if suite in HYBRID:
        k, ct = mlkem_public_from_spki(HYBRID[suite][0], b64d(keys[1])).encapsulate()
        out.append(b64e(ct))
        secrets.append(k)
    salt = os.urandom(32)
    return {"salt": b64e(salt), "encapsulatedKeys": out}, combine_shared_secret(secrets, salt, suite)


# ------------------------------------------------------------------------------------ AEAD
def _ctr(key, nonce12, data):
    c = Cipher(algorithms.AES(key), modes.CTR(nonce12 + b"\x00\x00\x00\x00")).encryptor()
    return c.update(data) + c.finalize()


def aead_seal(key, key_context, nonce12, ad, plaintext):
    """Basic-definitions.md V4 AEAD, java Aead.java: nonce || KMAC tag || AES-256-CTR."""
    kenc = kdf(key, "aead/enc", key_context)
    kmac_key = kdf(key, "aead/mac", key_context)
    c = _ctr(kenc, nonce12, plaintext)
    tag = kmac256(kmac_key, nonce12 + ad + c, 32, "PA4MAC-AEAD")
    return nonce12 + tag + c


def aead_open(key, key_context, ad, blob):
    if len(blob) < 44:
        raise ValueError("AEAD blob shorter than 44 bytes")
    nonce12, tag, c = blob[:12], blob[12:44], blob[44:]
    kenc = kdf(key, "aead/enc", key_context)
    kmac_key = kdf(key, "aead/mac", key_context)
    if not hmac.compare_digest(tag, kmac256(kmac_key, nonce12 + ad + c, 32, "PA4MAC-AEAD")):
        raise ValueError("AEAD tag mismatch")
    return _ctr(kenc, nonce12, c)


# ------------------------------------------------------------------------------------ E2EE
SH1 = {
    "generic_application": "/pa/generic/application",
    "generic_activation": "/pa/generic/activation",
    "activation_layer2": "/pa/activation",
    "upgrade_start": "/pa/upgrade/start",
    "vault_unlock": "/pa/vault/unlock",
    "token_create": "/pa/token/create",
    "password_change": "/pa/password/change",
    "biometry_add": "/pa/biometry/add",
    # Activation status: the disagreement list says follow the code (generic activation scope).
    "activation_status": "/pa/generic/activation",
}


def sh2(app_secret_raw, e2ee_sh2_key=None):
    """End-To-End-Encryption.md V4: SHA3-256(APP_SECRET) or KMAC(KEY_E2EE_SHARED_INFO2, APP_SECRET, 32, "PA4SH2")."""
    if e2ee_sh2_key is None:
        return sha3_256(app_secret_raw)
    return kmac256(e2ee_sh2_key, app_secret_raw, 32, "PA4SH2")


class E2EE:
    """One request/response pair (End-To-End-Encryption.md V4, java AeadUtils / ClientAeadEncryptor)."""

    def __init__(self, shared_secret, sh1, app_key, app_secret_raw, temporary_key_id, activation_id=None,
                 e2ee_sh2_key=None, nonce=None):
        self.key = shared_secret
        self.nonce = nonce or os.urandom(24)
        if self.nonce[:12] == self.nonce[12:]:
            self.nonce = os.urandom(24)
        self.kc = VERSION.encode() + sh1.encode() + self.nonce
        self.ad0 = lv(VERSION) + lv(app_key) + (lv(activation_id) if activation_id else b"") + lv(temporary_key_id)
        self.sh2 = sh2(app_secret_raw, e2ee_sh2_key if activation_id else None)
        self.temporary_key_id = temporary_key_id

    def ad(self, ts):
        return self.ad0 + lv(struct.pack(">Q", ts)) + lv(self.nonce) + lv(self.sh2)

    def encrypt_request(self, plaintext, ts=None):
        ts = now_ms() if ts is None else ts
        blob = aead_seal(self.key, self.kc, self.nonce[:12], self.ad(ts), plaintext)
        return {"temporaryKeyId": self.temporary_key_id, "encryptedData": b64e(blob), "nonce": b64e(self.nonce),
                "timestamp": ts}

    def decrypt_response(self, body):
        if not isinstance(body, dict) or not isinstance(body.get("encryptedData"), str) or not isinstance(
                body.get("timestamp"), int):
            raise ValueError("response is not {encryptedData, timestamp}: %r" % (body,))
        blob = b64d(body["encryptedData"])
        if blob[:12] != self.nonce[12:]:
            raise ValueError("response AEAD nonce is not the request's second half")
        return aead_open(self.key, self.kc, self.ad(body["timestamp"]), blob)

    # the server side, for the self-test
    def decrypt_request(self, body):
        blob = b64d(body["encryptedData"])
        return aead_open(self.key, self.kc, self.ad(body["timestamp"]), blob)

    def encrypt_response(self, plaintext, ts):
        return {"encryptedData": b64e(aead_seal(self.key, self.kc, self.nonce[12:], self.ad(ts), plaintext)),
                "timestamp": ts}


# ------------------------------------------------------------------------------------ JWT / JWS
def jwt_hs384(claims, key, encode=None):
    """Compact JWS, HS384 (Temporary-Encryption-Keys.md, mobile-sdk AeadEncryptorFactory.cpp).
    encode: the payload's JSON bytes as the sender writes them (dialect.dumps)."""
    header = b64u_e(json.dumps({"alg": "HS384", "typ": "JWT"}, separators=(",", ":")).encode())
    payload = b64u_e(encode(claims) if encode else json.dumps(claims, separators=(",", ":")).encode())
    sig = hmac.new(key, (header + "." + payload).encode(), hashlib.sha384).digest()
    return header + "." + payload + "." + b64u_e(sig)


def jws_hmac_compact(encoded_header, encoded_payload, key):
    alg = json.loads(b64u_d(encoded_header))["alg"]
    h = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}[alg]
    return b64u_e(hmac.new(key, (encoded_header + "." + encoded_payload).encode(), h).digest())


def jws_json_verify_es384(jws, pub):
    """JWS JSON general serialization; every signature must be ES384 for EC_P384 and verify."""
    return jws_json_verify(jws, pub)


def jws_json_verify(jws, ec_pub, mldsa_pub=None, suite=SUITE):
    """JWS JSON general serialization (Temporary-Encryption-Keys.md, mobile-sdk AeadEncryptorFactory
    _BuildKeyList: the ECDSA key, then the ML-DSA key of a hybrid key). EC_P384: ES384 signatures only,
    each verifying. Hybrid suites: exactly one ES384 and one ML-DSA-65/87 signature (the suite's), both
    verifying (pure ML-DSA, empty context, over ASCII `protected.payload`); any other is refused."""
    if isinstance(jws, str):
        jws = json.loads(jws)
    if not isinstance(jws, dict) or not isinstance(jws.get("payload"), str):
        raise ValueError("JWS JSON has no payload")
    sigs = jws.get("signatures")
    if not isinstance(sigs, list) or not sigs:
        raise ValueError("JWS has no signatures")
    payload = jws["payload"]
    want = ["ES384"] + ([HYBRID[suite][1]] if suite in HYBRID else [])
    if suite in HYBRID and mldsa_pub is None:
        raise ValueError("%s needs the ML-DSA public key to verify the JWS" % suite)
    seen = []
    for s in sigs:
        if not isinstance(s, dict) or not isinstance(s.get("protected"), str) or not isinstance(s.get("signature"), str):
            raise ValueError("JWS signature entry malformed")
        prot = json.loads(b64u_d(s["protected"]))
        alg = prot.get("alg")
        if alg not in want:
            raise ValueError("%s JWS signature alg %r (want %s)" % (suite, alg, "+".join(want)))
        if alg in seen:
            raise ValueError("JWS carries two %s signatures" % alg)
        seen.append(alg)
        signing_input = (s["protected"] + "." + payload).encode()
        if alg == "ES384":
            es384_verify(ec_pub, signing_input, b64u_d(s["signature"]))
        else:
            mldsa_verify(mldsa_pub, signing_input, b64u_d(s["signature"]))
    if suite in HYBRID and sorted(seen) != sorted(want):
        raise ValueError("%s JWS needs both %s signatures, has %s" % (suite, "+".join(want), "+".join(seen) or "none"))
    return json.loads(b64u_d(payload))


# ------------------------------------------------------------------------------------ codes, counter, status, token
def next_ctr(ctr_data):
    return sha3_256(ctr_data)


def normalized_data(method, uri_id, nonce16, body, app_secret_b64):
    return "&".join([method.upper(), b64e(uri_id.encode()), b64e(nonce16), b64e(body), app_secret_b64]).encode()


def auth_code_components(keys, ctr_data, data):
    """Computing-and-Validating-Authentication-Codes.md V4, mobile-sdk v4/FunctionsV4.cpp."""
    comps = []
    for i in range(1, len(keys) + 1):
        d = b""
        for j in range(1, i + 1):
            d = kmac256(keys[j - 1], ctr_data + d, 32, "PA4CODE")
        comps.append(kmac256(d, data, 32, "PA4CODE"))
    return comps


def auth_code_online(keys, ctr_data, data):
    return b64e(b"".join(auth_code_components(keys, ctr_data, data)))


def decimal_component(c, digits=8):
    return str((int.from_bytes(c[-4:], "big") & 0x7FFFFFFF) % (10 ** digits)).zfill(digits)


def auth_code_offline(keys, ctr_data, data, digits=8):
    return "-".join(decimal_component(c, digits) for c in auth_code_components(keys, ctr_data, data))


def auth_header(activation_id, app_key, nonce16, code_type, code, sdk_order=False):
    """sdk_order: as the SDK's core writes it (mobile-sdk HttpHeaderHelper.cpp buildAuthenticationHeader):
    pa_version, pa_application_key, pa_activation_id, pa_auth_code_type, pa_auth_code, pa_nonce."""
    if sdk_order:
        return ('PowerAuth pa_version="%s", pa_application_key="%s", pa_activation_id="%s", pa_auth_code_type="%s", '
                'pa_auth_code="%s", pa_nonce="%s"' % (VERSION, app_key, activation_id, code_type, code, b64e(nonce16)))
    return ('PowerAuth pa_activation_id="%s", pa_application_key="%s", pa_nonce="%s", pa_auth_code_type="%s", '
            'pa_auth_code="%s", pa_version="%s"' % (activation_id, app_key, b64e(nonce16), code_type, code, VERSION))


def ctr_data_hash(mac_ctr_key, ctr_data):
    return kmac256(mac_ctr_key, ctr_data, 32, "PA4MAC-CTR")


STATES = {1: "CREATED", 2: "PENDING_COMMIT", 3: "ACTIVE", 4: "BLOCKED", 5: "REMOVED"}


def parse_status_blob(blob, mac_status_key):
    """Activation-Status.md V4, java PowerAuthClientActivation.getStatusFromBlob: 48 data + 32 MAC."""
    if len(blob) != 80:
        raise ValueError("status blob must be 80 bytes, got %d" % len(blob))
    data, mac = blob[:48], blob[48:]
    if not hmac.compare_digest(mac, kmac256(mac_status_key, data, 32, "PA4MAC-STATUS")):
        raise ValueError("status blob MAC mismatch")
    if data[:4] != bytes.fromhex("DEC0DED4"):
        raise ValueError("status blob magic %s" % data[:4].hex())
    return {"state": STATES.get(data[4], "UNKNOWN(%d)" % data[4]), "currentVersion": data[5],
            "upgradeVersion": data[6], "flags": data[7], "ctrByte": data[12], "failedAttempts": data[13],
            "maxFailedAttempts": data[14], "lookAhead": data[15], "ctrDataHash": data[16:48]}


def token_digest(token_secret, nonce16, ts_ms):
    """MAC-Token-Based-Authentication.md V4, java TokenUtils (Token_Digest_Test_Vectors.json)."""
    return kmac256(token_secret, nonce16 + b"&" + str(ts_ms).encode() + b"&" + VERSION.encode(), 32, "PA4DIGEST")


def token_header(token_id, token_secret, nonce16=None, ts_ms=None):
    """The SDK's order already (mobile-sdk HttpHeaderHelper.cpp buildTokenHeader): version first."""
    nonce16 = nonce16 or os.urandom(16)
    ts_ms = now_ms() if ts_ms is None else ts_ms
    d = token_digest(token_secret, nonce16, ts_ms)
    return ('PowerAuth version="%s", token_id="%s", token_digest="%s", nonce="%s", timestamp="%d"'
            % (VERSION, token_id, b64e(d), b64e(nonce16), ts_ms))


def _ec_x_minimal(point):
    """A P-384 public key (SEC1, compressed or not) as its affine X coordinate in minimal unsigned
    big-endian form (java BigInteger.toByteArray() without its sign byte)."""
    x = pub_from_bytes(point).public_numbers().x
    return x.to_bytes((x.bit_length() + 7) // 8, "big")


def fingerprint_upstream(suite, device_ecdsa, activation_id, server_ecdsa, device_mldsa=None, server_mldsa=None):
    """Upstream's V4 activation fingerprint (powerauth-crypto lib/util/HybridPublicKeyFingerprint.java):
    SHA3-256(suite name || device ECDSA X || [device ML-DSA SPKI] || activation id || server ECDSA X ||
    [server ML-DSA SPKI]), each P-384 key as its minimal unsigned X coordinate, each ML-DSA key as its
    SubjectPublicKeyInfo DER; the last four bytes decimalised to 8 digits. Checked against
    Fingerprint_V4_Upstream_Java.json (the Java code's own outputs) by the self-test."""
    if not device_ecdsa or not server_ecdsa or activation_id is None:
        raise ValueError("missing data for the %s fingerprint" % suite)
    if suite == SUITE:
        data = suite.encode() + _ec_x_minimal(device_ecdsa) + activation_id.encode("utf-8") + _ec_x_minimal(server_ecdsa)
    elif suite in HYBRID:
        if not device_mldsa or not server_mldsa:
            raise ValueError("missing ML-DSA keys for the %s fingerprint" % suite)
        data = (suite.encode() + _ec_x_minimal(device_ecdsa) + device_mldsa + activation_id.encode("utf-8")
                + _ec_x_minimal(server_ecdsa) + server_mldsa)
    else:
        raise ValueError("unsupported algorithm %r" % suite)
    return decimal_component(sha3_256(data), 8)


def fingerprint(device_pub, activation_id, server_pub, suite=SUITE, digits=8):
    """A guess (README): upstream leaves the V4 fingerprint a TODO in powerauth-java-crypto
    (PowerAuthClientActivation.computeActivationEcFingerprint returns ""); the design digest says
    SHA3-256(suite || device key || activationId || server key), decimalised like V3."""
    h = sha3_256(suite.encode() + device_pub + activation_id.encode() + server_pub)
    return decimal_component(h, digits)


# ------------------------------------------------------------------------------------ configuration string
def _read_count(b, i):
    c = b[i]
    if c < 0x80:
        return c, i + 1
    if c < 0xC0:
        return ((c & 0x3F) << 8) | b[i + 1], i + 2
    return int.from_bytes(b[i:i + 4], "big") & 0x3FFFFFFF, i + 4


def _read_data(b, i):
    n, i = _read_count(b, i)
    if i + n > len(b):
        raise ValueError("configuration data runs past the end")
    return b[i:i + n], i + n


def parse_config(s):
    """SDK-Configuration.md / mobile-sdk PublicTypes: 0x01 || Data(appKey) || Data(appSecret) ||
    Count || (id || Data)*; key 0x02 = P-384 ECDSA master public key, 0x03 / 0x04 = ML-DSA-65 /
    ML-DSA-87 master public key as SPKI DER (design digest section 15; any order)."""
    b = b64d(s)
    if not b or b[0] != 1:
        raise ValueError("configuration format byte is not 0x01")
    app_key, i = _read_data(b, 1)
    app_secret, i = _read_data(b, i)
    n, i = _read_count(b, i)
    keys = {}
    for _ in range(n):
        kid = b[i]
        data, i = _read_data(b, i + 1)
        keys[kid] = data
    if i != len(b):
        raise ValueError("trailing bytes in configuration")
    if len(app_key) != 16 or len(app_secret) != 16:
        raise ValueError("application key and secret must be 16 bytes each")
    mldsa_keys = {}
    for kid, name in ((0x03, "ML-DSA-65"), (0x04, "ML-DSA-87")):
        if kid in keys:
            if not hybrid_available():
                raise ValueError("configuration key 0x%02x needs ML-DSA (cryptography >= 45)" % kid)
            mldsa_keys[name] = mldsa_public_from_spki(name, keys[kid])
    return {"mldsa": mldsa_keys, "appKey": b64e(app_key), "appSecret": b64e(app_secret), "appSecretRaw": app_secret, "keys": keys}


# ------------------------------------------------------------------------------------ self-test
def _load(d, name):
    with open(os.path.join(d, name)) as f:
        return json.load(f)


def _mlkem_seed_from_pkcs8(der):
    """The Java vectors' PKCS#8 holds the 64-byte seed (d || z) as a bare OCTET STRING (the pre-standard
    layout OpenSSL 3.5 refuses): 22-byte header, then the seed (vectors INDEX.md)."""
    if len(der) != 84 or der[18:20] != b"\x04\x40":
        raise ValueError("unexpected ML-KEM PKCS#8 layout")
    return der[20:84]


def _selftest_hybrid(d, report, hybrid_jws):
    # ML-KEM-768 decapsulation (FIPS 203 via cryptography) against the Java test vectors
    ok = total = 0
    for v in _load(d, "MLKEM_768_Test_Vectors.json")["mlkem_test_vectors"]:
        total += 1
        try:
            sk = mlkem.MLKEM768PrivateKey.from_seed_bytes(_mlkem_seed_from_pkcs8(b64d(v["pqcClientPrivateKey"])))
            ok += sk.decapsulate(b64d(v["pqcCiphertext"])) == b64d(v["sharedSecret"])
        except ValueError:
            pass
    report("MLKEM_768_Test_Vectors.json (ML-KEM-768 decapsulation)", ok, total)

    # The hybrid KEM steps: P-384 ECDH and ML-KEM-768 in suite order. The file's derivation is the
    # superseded May-2025 one (KDF(ECDH_X || ML-KEM ss, "shared-secret/ec-p384-ml-l3")); it still pins
    # both KEM steps and their order, so it is checked as such, not as the final combiner.
    ok = total = 0
    for v in _load(d, "ECDHE_P384_MLKEM_768_Test_Vectors.json")["ecdhe_mlkem_test_vectors"]:
        total += 1
        try:
            x = ecdh(priv_from_scalar(b64d(v["ecClientPrivateKey"])), pub_from_bytes(b64d(v["ecServerPublicKey"])))
            sk = mlkem.MLKEM768PrivateKey.from_seed_bytes(_mlkem_seed_from_pkcs8(b64d(v["pqcClientPrivateKey"])))
            k = sk.decapsulate(b64d(v["pqcCiphertext"]))
            ok += kdf(x + k, "shared-secret/ec-p384-ml-l3") == b64d(v["sharedSecret"])
        except ValueError:
            pass
    report("ECDHE_P384_MLKEM_768_Test_Vectors.json (ECDH + ML-KEM-768 steps in suite order; OBSOLETE combiner)", ok, total)

    # The hybrid response JWS (ES384 + ML-DSA-65 by the Java test's keys): both signatures verify;
    # the same JWS without its ML-DSA signature, with an altered one, with the ES384 one alone, with
    # a flipped payload, or verified as ML-DSA-87 is refused.
    ok = total = 0
    for jws, ec_pub, mldsa_der in hybrid_jws:
        mpub = mldsa_public_from_spki("ML-DSA-65", mldsa_der)
        total += 1
        try:
            jws_json_verify(jws, ec_pub, mpub, "EC_P384_ML_L3")
            ok += 1
        except ValueError:
            pass
        for bad in _jws_mutations(jws):
            total += 1
            try:
                jws_json_verify(bad, ec_pub, mpub, "EC_P384_ML_L3")
            except (ValueError, KeyError):
                ok += 1
    report("TemporaryKeyTest_JWS_Vectors.json (ES384 + ML-DSA-65 response JWS; 4 mutations refused)", ok, total)

    # Final-design hybrid shared secret: no upstream vector; round trips per suite, the sizes of
    # the request and response elements (FIPS 203), and the label's effect.
    ok = total = 0
    for suite, (kem, _, _) in HYBRID.items():
        for _ in range(3):
            c = SharedSecretClient(suite)
            req = c.request()
            resp, s_srv = shared_secret_server(req)
            total += 1
            ek, ct = b64d(req["encapsulationKeys"][1]), b64d(resp["encapsulatedKeys"][1])
            sizes = {"ML-KEM-768": (1184 + 22, 1088), "ML-KEM-1024": (1568 + 22, 1568)}[kem]
            ok += (c.finish(resp) == s_srv and (len(ek), len(ct)) == sizes and len(b64d(req["encapsulationKeys"][0])) == 97
                   and len(b64d(resp["encapsulatedKeys"][0])) == 97)
    report("DHKEM(P-384)+ML-KEM-768/1024+KMAC hybrid shared secret round trips (no upstream vector)", ok, total)


def _jws_mutations(jws):
    sigs = jws["signatures"]
    es = [s for s in sigs if json.loads(b64u_d(s["protected"]))["alg"] == "ES384"]
    ml = [s for s in sigs if json.loads(b64u_d(s["protected"]))["alg"] != "ES384"]
    sig = bytearray(b64u_d(ml[0]["signature"]))
    sig[100] ^= 1
    altered = dict(ml[0], signature=b64u_e(bytes(sig)))
    payload = bytearray(b64u_d(jws["payload"]))
    payload[-2] ^= 1
    relabelled = dict(ml[0], protected=b64u_e(b'{"alg":"ML-DSA-87"}'))
    return [{"payload": jws["payload"], "signatures": es},
            {"payload": jws["payload"], "signatures": es + [altered]},
            {"payload": b64u_e(bytes(payload)), "signatures": sigs},
            {"payload": jws["payload"], "signatures": es + [relabelled]}]


def _fingerprint_vector_file(d):
    p = os.path.join(d, "Fingerprint_V4_Upstream_Java.json")
    return p if os.path.exists(p) else None


def selftest(d):
    results = []

    def report(name, ok, total):
        results.append((name, ok, total))
        print("%s: %d/%d" % (name, ok, total))

    # primitives: own Keccak against hashlib (SHA3 / SHAKE) and pycryptodome's KMAC256 if present
    ok = total = 0
    for v in _load(d, "SHA3_256_Test_Vectors.json")["sha3_256_test_vectors"]:
        m = bytes.fromhex(v["msg"])
        total += 1
        ok += sha3_256(m).hex() == v["digest"] and _keccak(136, m, 0x06, 32).hex() == v["digest"]
    report("SHA3_256_Test_Vectors.json (hashlib and own Keccak)", ok, total)
    ok = total = 0
    for v in _load(d, "SHA3_384_Test_Vectors.json")["sha3_384_test_vectors"]:
        m = bytes.fromhex(v["msg"])
        total += 1
        ok += sha3_384(m).hex() == v["digest"] and _keccak(104, m, 0x06, 48).hex() == v["digest"]
    report("SHA3_384_Test_Vectors.json (hashlib and own Keccak)", ok, total)
    ok = total = 0
    for n in (0, 1, 135, 136, 137, 300):
        m = os.urandom(n)
        total += 1
        ok += cshake256(m, 64) == hashlib.shake_256(m).digest(64)
    # NIST SP 800-185 KMAC256 sample #4
    k = bytes(range(0x40, 0x60))
    total += 1
    ok += kmac256(k, bytes(range(4)), 64, "My Tagged Application").hex().upper() == (
        "20C570C31346F703C9AC36C61C03CB64C3970D0CFC787E9B79599D273A68D2F7"
        "F69D4CC3DE9D104A351689F27CF6F5951F0103F33F4F24871024D9C27773A8DD")
    try:
        from Crypto.Hash import KMAC256 as _K
        for n in range(20):
            key, msg, s = os.urandom(32 + n), os.urandom(n * 13), os.urandom(n % 5).hex().encode()
            total += 1
            ok += kmac256(key, msg, 32 + n, s) == _K.new(key=key, data=msg, mac_len=32 + n, custom=s).digest()
    except ImportError:
        pass
    report("KMAC256/cSHAKE256 (SHAKE256, SP 800-185 sample, pycryptodome KMAC256)", ok, total)

    ok = total = 0
    for v in _load(d, "v4-kdf.json")["data"]:
        i = v["input"]
        total += 1
        ok += kdf(b64d(i["key"]), i["label"], b64d(i["custom"]), int(i["outSize"])) == b64d(v["output"]["derivedKey"])
    report("v4-kdf.json", ok, total)
    ok = total = 0
    for v in _load(d, "pbkdf-v4.json")["data"]:
        i = v["input"]
        total += 1
        ok += kdf_password(i["password"], b64d(i["salt"]), int(i["outSize"])) == b64d(v["output"]["derivedKey"])
    report("pbkdf-v4.json", ok, total)

    ok = total = 0
    for chain in _load(d, "Hash_Based_Counter_Test_Vectors.json")["hash_based_counter_test_vectors"]:
        for i in range(20):
            total += 1
            ok += next_ctr(b64d(chain["ctrData[%d]" % i])) == b64d(chain["ctrData[%d]" % (i + 1)])
    report("Hash_Based_Counter_Test_Vectors.json", ok, total)

    ok = total = 0
    for v in _load(d, "Token_Digest_Test_Vectors.json")["token_digest_test_vectors"]:
        total += 1
        ts = int(b64d(v["timestamp"]).decode())
        ok += token_digest(b64d(v["tokenSecret"]), b64d(v["nonce"]), ts) == b64d(v["tokenDigest"])
    report("Token_Digest_Test_Vectors.json", ok, total)

    for fname, key in (("E2ee_Application_Scope_Test_Vectors_40.json", "e2ee_test_vectors_application_scope"),
                       ("E2ee_Activation_Scope_Test_Vectors_40.json", "e2ee_test_vectors_activation_scope")):
        ok = total = 0
        for v in _load(d, fname)[key]:
            act = v.get("activationId")
            sh1 = SH1["generic_activation" if act else "generic_application"]
            e = E2EE(b64d(v["envelopeKey"]), sh1, v["applicationKey"], b64d(v["applicationSecret"]),
                     v["temporaryKeyId"], act, b64d(v["sharedInfo2Key"]) if act else None, b64d(v["nonce"]))
            req = e.encrypt_request(v["requestData"].encode(), int(v["timestampRequest"]))
            total += 1
            ok += req["encryptedData"] == v["encryptedDataRequest"] and e.decrypt_request(req) == v["requestData"].encode()
            resp = {"encryptedData": v["encryptedDataResponse"], "timestamp": int(v["timestampResponse"])}
            total += 1
            try:
                ok += e.decrypt_response(resp) == v["responseData"].encode() and e.encrypt_response(
                    v["responseData"].encode(), int(v["timestampResponse"]))["encryptedData"] == v["encryptedDataResponse"]
            except ValueError:
                pass
        report(fname + " (request + response)", ok, total)

    # P-384 ECDH (raw x-coordinate) from the ECDHE vectors: only the primitive; the derivation
    # in that file is the superseded May-2025 one, so the shared secret itself is not compared.
    ok = total = 0
    for v in _load(d, "ECDHE_P384_Test_Vectors.json")["ecdhe_test_vectors"]:
        sk = priv_from_scalar(b64d(v["ecClientPrivateKey"]))
        pk = pub_from_bytes(b64d(v["ecServerPublicKey"]))
        total += 1
        ok += len(ecdh(sk, pk)) == 48 and pub_bytes(pk) == b64d(v["ecServerPublicKey"])
    report("ECDHE_P384_Test_Vectors.json (ECDH primitive and point decoding only; OBSOLETE derivation)", ok, total)

    # ES384 JWS JSON (the only ES384 signatures in any vector source) and the HMAC request JWS
    ok = total = 0
    hybrid_jws = []
    jv = _load(d, "TemporaryKeyTest_JWS_Vectors.json")
    for c in jv["cases"]:
        if "signingKey" in c:
            total += 1
            ok += jws_hmac_compact(c["encodedHeader"], c["encodedPayload"], b64d(c["signingKey"])) == c["expectedSignature"]
        elif c.get("publicKeyEs384") and c.get("responsePayload"):
            jws = json.loads(c["responsePayload"]) if isinstance(c["responsePayload"], str) else c["responsePayload"]
            pub = serialization.load_der_public_key(b64d(c["publicKeyEs384"])) if len(b64d(c["publicKeyEs384"])) > 97 \
                else pub_from_bytes(b64d(c["publicKeyEs384"]))
            es = {"payload": jws["payload"], "signatures": [s for s in jws["signatures"]
                                                             if json.loads(b64u_d(s["protected"]))["alg"] == "ES384"]}
            total += 1
            try:
                jws_json_verify_es384(es, pub)
                ok += 1
            except (ValueError, KeyError):
                pass
            if c.get("publicKeyMlDsa65"):
                hybrid_jws.append((jws, pub, b64d(c["publicKeyMlDsa65"])))
    report("TemporaryKeyTest_JWS_Vectors.json (HMAC request JWS, ES384 of the response JWS)", ok, total)

    if not hybrid_available():
        report("hybrid suites: cryptography without ML-KEM/ML-DSA (needs >= 45)", 0, 1)
    else:
        _selftest_hybrid(d, report, hybrid_jws)

    # Upstream's V4 fingerprint: the Java implementation's outputs (EC_P384 and EC_P384_ML_L3, and the
    # cases it refuses for missing keys)
    ok = total = 0
    fpath = _fingerprint_vector_file(d)
    if fpath is None:
        report("Fingerprint_V4_Upstream_Java.json: file not found", 0, 1)
    else:
        for c in json.load(open(fpath))["cases"]:
            total += 1
            exp = c["expected"]
            try:
                got = fingerprint_upstream(c["algorithm"], b64d(c.get("deviceEcdsa") or ""), c.get("activationId"),
                                           b64d(c.get("serverEcdsa") or ""), b64d(c["deviceMldsa"]) if c.get("deviceMldsa") else None,
                                           b64d(c["serverMldsa"]) if c.get("serverMldsa") else None)
            except (ValueError, TypeError):
                got = None
            ok += (got is None) if exp.get("error") else (got == exp.get("fingerprint"))
        report("Fingerprint_V4_Upstream_Java.json (HybridPublicKeyFingerprint)", ok, total)

    # No vector exists for the final shared secret, auth codes, status blob:
    # a round trip shows only self-consistency (README, "Where we had to guess").
    ok = total = 0
    for _ in range(5):
        c = SharedSecretClient()
        resp, s_srv = shared_secret_server(c.request())
        total += 1
        ok += c.finish(resp) == s_srv
    report("DHKEM(P-384)+KMAC shared secret round trip (no upstream vector)", ok, total)

    failed = [r for r in results if r[1] != r[2]]
    # (worded so that `make test`'s "N passed, 0 failed" count does not pick this line up)
    print("powerauth4 selftest: %d of %d cases match in %d groups%s" % (
        sum(r[1] for r in results), sum(r[2] for r in results), len(results), "" if not failed else " -- MISMATCHES"))
    return not failed


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "selftest":
        sys.exit(0 if selftest(sys.argv[2]) else 1)
    print(__doc__)
    sys.exit(2)

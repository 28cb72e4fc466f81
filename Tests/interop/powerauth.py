#!/usr/bin/env python3
"""PowerAuth V3.0-3.3 cryptography, written from the upstream PowerAuth documents.

Independent of SecurePIN's Swift code on purpose: this module is the second reading of the
protocol that the interoperability tests put against SecurePIN. Every function names the
upstream document (wultra/powerauth-crypto docs/ unless said otherwise) it implements.
README.md in this folder lists the places where the documents left room for a guess.

Run `python3 powerauth.py selftest [VECTOR_DIR]` to check it against the official vectors.
"""
import base64
import hashlib
import hmac
import json
import os
import struct
import sys

from cryptography.hazmat.primitives import hashes, padding
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from cryptography.exceptions import InvalidSignature

VERSIONS = ("3.0", "3.1", "3.2", "3.3")

# --------------------------------------------------------------------------------------------
# Encodings
# --------------------------------------------------------------------------------------------


def b64e(b):
    return base64.b64encode(b).decode("ascii")


def b64d(s):
    if not isinstance(s, str):
        raise ValueError("expected a Base64 string")
    return base64.b64decode(s.encode("ascii"), validate=True)


def b64ue(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode("ascii")


def b64ud(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def fold(b32):
    """ByteUtils.convert32Bto16B: XOR of the two 16-byte halves (Basic-definitions.md)."""
    assert len(b32) == 32
    return bytes(a ^ b for a, b in zip(b32[:16], b32[16:]))


def concat_with_sizes(*items):
    """ByteUtils.concatWithSizes: u32be(len) || bytes per item, None -> u32be(0)
    (End-To-End-Encryption.md; mobile-sdk ByteUtils_Join)."""
    out = b""
    for it in items:
        if it is None:
            out += struct.pack(">I", 0)
            continue
        if isinstance(it, str):
            it = it.encode("utf-8")
        out += struct.pack(">I", len(it)) + it
    return out


def hmac_sha256(key, data):
    return hmac.new(key, data, hashlib.sha256).digest()


def sha256(data):
    return hashlib.sha256(data).digest()


# --------------------------------------------------------------------------------------------
# Symmetric primitives
# --------------------------------------------------------------------------------------------


def aes_ecb_block(key, block):
    e = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return e.update(block) + e.finalize()


def aes_cbc_encrypt(key, iv, data, pad=True):
    if pad:
        p = padding.PKCS7(128).padder()
        data = p.update(data) + p.finalize()
    e = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    return e.update(data) + e.finalize()


def aes_cbc_decrypt(key, iv, data, pad=True):
    if len(data) == 0 or len(data) % 16:
        raise ValueError("ciphertext is not whole AES blocks")
    d = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
    out = d.update(data) + d.finalize()
    if pad:
        u = padding.PKCS7(128).unpadder()
        out = u.update(out) + u.finalize()
    return out


def kdf(master, index):
    """KDF (Key-derivation.md, Basic-definitions.md): AES-128(master, 0^8 || u64be(index)).
    The eight zero bytes come first; checked against compute-derived-keys.json."""
    return aes_ecb_block(master, b"\x00" * 8 + struct.pack(">Q", index))


def kdf_internal(key, data):
    """KDF_INTERNAL: fold(HMAC-SHA256(key, data)), the key being the HMAC key (mobile-sdk
    ProtocolUtils.cpp DeriveSecretKeyFromIndex; the docs' prose is ambiguous, vectors decide)."""
    return fold(hmac_sha256(key, data))


KEY_POSSESSION, KEY_KNOWLEDGE, KEY_BIOMETRY, KEY_TRANSPORT, KEY_VAULT = 1, 2, 3, 1000, 2000


def derive_keys(master):
    return {
        "possession": kdf(master, KEY_POSSESSION),
        "knowledge": kdf(master, KEY_KNOWLEDGE),
        "biometry": kdf(master, KEY_BIOMETRY),
        "transport": kdf(master, KEY_TRANSPORT),
        "vault": kdf(master, KEY_VAULT),
    }


def x963_kdf_sha256(z, info, length):
    """ANSI X9.63 KDF with SHA-256, counter u32be from 1 (End-To-End-Encryption.md)."""
    out, ctr = b"", 1
    while len(out) < length:
        out += sha256(z + struct.pack(">I", ctr) + info)
        ctr += 1
    return out[:length]


# --------------------------------------------------------------------------------------------
# P-256
# --------------------------------------------------------------------------------------------

CURVE = ec.SECP256R1()


def pub_from_bytes(b):
    return ec.EllipticCurvePublicKey.from_encoded_point(CURVE, b)


def pub_bytes(pub, compressed=False):
    return pub.public_bytes(Encoding.X962, PublicFormat.CompressedPoint if compressed else PublicFormat.UncompressedPoint)


def priv_from_scalar(b):
    return ec.derive_private_key(int.from_bytes(b, "big"), CURVE)


def priv_scalar(priv):
    return priv.private_numbers().private_value.to_bytes(32, "big")


def new_keypair():
    return ec.generate_private_key(CURVE)


def ecdh(priv, pub):
    return priv.exchange(ec.ECDH(), pub)


def master_secret(priv, pub):
    """KEY_MASTER_SECRET = fold(ECDH x) (Key-derivation.md)."""
    return fold(ecdh(priv, pub))


def ecdsa_sign_der(priv, data):
    return priv.sign(data, ec.ECDSA(hashes.SHA256()))


def ecdsa_verify_der(pub, sig, data):
    try:
        pub.verify(sig, data, ec.ECDSA(hashes.SHA256()))
        return True
    except (InvalidSignature, ValueError):
        return False


def der_to_jose(der):
    r, s = decode_dss_signature(der)
    return r.to_bytes(32, "big") + s.to_bytes(32, "big")


def jose_to_der(jose):
    if len(jose) != 64:
        raise ValueError("JOSE ES256 signature must be 64 bytes")
    return encode_dss_signature(int.from_bytes(jose[:32], "big"), int.from_bytes(jose[32:], "big"))


# --------------------------------------------------------------------------------------------
# ECIES (End-To-End-Encryption.md at 3.3, and its 3.0/3.1/3.2 predecessors)
# --------------------------------------------------------------------------------------------

SH1 = {
    "activation_layer_1": b"/pa/generic/application",
    "activation_layer_2": b"/pa/activation",
    "upgrade": b"/pa/upgrade",
    "vault_unlock": b"/pa/vault/unlock",
    "token_create": b"/pa/token/create",
    "recovery_confirm": b"/pa/recovery/confirm",
    "generic_application": b"/pa/generic/application",
    "generic_activation": b"/pa/generic/activation",
}


class EciesError(Exception):
    pass


def sh2_base(app_secret_b64, transport_key=None):
    """Application scope SHA256(APP_SECRET text); activation scope HMAC(KEY_TRANSPORT, APP_SECRET
    text). 'APPLICATION_SECRET is in Base64 form ... reinterpret as ASCII bytes'."""
    if transport_key is None:
        return sha256(app_secret_b64.encode("ascii"))
    return hmac_sha256(transport_key, app_secret_b64.encode("ascii"))


def associated_data(version, app_key_b64, activation_id=None, temp_key_id=None):
    """3.2: concatWithSizes(VERSION, APP_KEY[, ACTIVATION_ID]); 3.3 adds TEMP_KEY_ID;
    3.0/3.1 have none."""
    if version in ("3.0", "3.1"):
        return None
    items = [version, app_key_b64]
    if activation_id is not None:
        items.append(activation_id)
    if version == "3.3":
        items.append(temp_key_id)
    return concat_with_sizes(*items)


def _shared_info_2(version, base, nonce, timestamp, eph_pub, ad):
    if version in ("3.0", "3.1"):
        return base
    return concat_with_sizes(base, nonce, struct.pack(">Q", timestamp), eph_pub, ad)


def _iv(version, key_iv, nonce):
    if version == "3.0":
        return b"\x00" * 16
    return kdf_internal(key_iv, nonce)


def envelope_key(version, shared_secret_z, sh1, eph_pub_bytes):
    info = sh1 + eph_pub_bytes
    if version in ("3.2", "3.3"):
        info = version.encode("ascii") + info
    return x963_kdf_sha256(shared_secret_z, info, 48)


class EciesContext:
    """One request/response pair. Client side: build with the recipient's public key and call
    encrypt_request/decrypt_response. Server side: EciesContext.server_open(...)."""

    def __init__(self, version, sh1, sh2b, ad, key48, eph_pub_bytes):
        self.version, self.sh1, self.sh2b, self.ad = version, sh1, sh2b, ad
        self.key48, self.eph_pub = key48, eph_pub_bytes
        self.k_enc, self.k_mac, self.k_iv = key48[:16], key48[16:32], key48[32:48]
        self.request_nonce = None

    # ---- client ----
    @classmethod
    def client(cls, version, recipient_pub_bytes, sh1, sh2b, ad, compressed=True):
        eph = new_keypair()
        eph_bytes = pub_bytes(eph.public_key(), compressed=compressed)
        z = ecdh(eph, pub_from_bytes(recipient_pub_bytes))
        return cls(version, sh1, sh2b, ad, envelope_key(version, z, sh1, eph_bytes), eph_bytes)

    def seal(self, plaintext, nonce, timestamp, eph_slot):
        iv = _iv(self.version, self.k_iv, nonce)
        ct = aes_cbc_encrypt(self.k_enc, iv, plaintext)
        mac = hmac_sha256(self.k_mac, ct + _shared_info_2(self.version, self.sh2b, nonce, timestamp, eph_slot, self.ad))
        return ct, mac

    def open(self, ct, mac, nonce, timestamp, eph_slot):
        expect = hmac_sha256(self.k_mac, ct + _shared_info_2(self.version, self.sh2b, nonce, timestamp, eph_slot, self.ad))
        if not hmac.compare_digest(expect, mac):
            raise EciesError("invalid MAC")
        try:
            return aes_cbc_decrypt(self.k_enc, _iv(self.version, self.k_iv, nonce), ct)
        except ValueError as e:
            raise EciesError("decryption failed: %s" % e)

    def encrypt_request(self, plaintext, temp_key_id=None, timestamp=None, nonce=None):
        """Returns the EciesEncryptedRequest JSON object for this version."""
        v = self.version
        nonce = None if v == "3.0" else (nonce or os.urandom(16))
        ts = None
        if v in ("3.2", "3.3"):
            ts = timestamp if timestamp is not None else now_ms()
        self.request_nonce = nonce
        ct, mac = self.seal(plaintext, nonce, ts, self.eph_pub)
        obj = {}
        if v == "3.3":
            obj["temporaryKeyId"] = temp_key_id
        obj["ephemeralPublicKey"] = b64e(self.eph_pub)
        obj["encryptedData"] = b64e(ct)
        obj["mac"] = b64e(mac)
        if nonce is not None:
            obj["nonce"] = b64e(nonce)
        if ts is not None:
            obj["timestamp"] = ts
        return obj

    def decrypt_response(self, obj):
        v = self.version
        ct, mac = b64d(obj["encryptedData"]), b64d(obj["mac"])
        if v == "3.0":
            nonce, ts = None, None
        elif v == "3.1":
            nonce, ts = self.request_nonce, None  # 3.1 reuses the request nonce
        else:
            nonce, ts = b64d(obj["nonce"]), int(obj["timestamp"])
            if nonce == self.request_nonce:
                raise EciesError("response nonce equals the request nonce")
        return self.open(ct, mac, nonce, ts, None)

    # ---- server ----
    @classmethod
    def server_open(cls, version, priv, req, sh1, sh2b, ad):
        """Decrypts an EciesEncryptedRequest (dict); returns (context, plaintext)."""
        eph_bytes = b64d(req["ephemeralPublicKey"])
        z = ecdh(priv, pub_from_bytes(eph_bytes))
        ctx = cls(version, sh1, sh2b, ad, envelope_key(version, z, sh1, eph_bytes), eph_bytes)
        nonce = b64d(req["nonce"]) if version != "3.0" else None
        ts = int(req["timestamp"]) if version in ("3.2", "3.3") else None
        ctx.request_nonce = nonce
        pt = ctx.open(b64d(req["encryptedData"]), b64d(req["mac"]), nonce, ts, eph_bytes)
        return ctx, pt

    def encrypt_response(self, plaintext, timestamp=None):
        v = self.version
        if v == "3.0":
            nonce, ts = None, None
        elif v == "3.1":
            nonce, ts = self.request_nonce, None
        else:
            nonce = os.urandom(16)
            while nonce == self.request_nonce:
                nonce = os.urandom(16)
            ts = timestamp if timestamp is not None else now_ms()
        ct, mac = self.seal(plaintext, nonce, ts, None)
        obj = {"encryptedData": b64e(ct), "mac": b64e(mac)}
        if v in ("3.2", "3.3"):
            obj["nonce"] = b64e(nonce)
            obj["timestamp"] = ts
        return obj


def now_ms():
    import time

    return int(time.time() * 1000)


# --------------------------------------------------------------------------------------------
# Authentication codes (Computing-and-Validating-Signatures.md)
# --------------------------------------------------------------------------------------------

FACTOR_SETS = {
    "possession": ("possession",),
    "knowledge": ("knowledge",),
    "biometry": ("biometry",),
    "possession_knowledge": ("possession", "knowledge"),
    "possession_biometry": ("possession", "biometry"),
    "possession_knowledge_biometry": ("possession", "knowledge", "biometry"),
}


def signature_components(data, keys, ctr_data):
    """The doc's pseudo-code starts every component from keys[0]; the Java reference
    (SignatureUtils.computePowerAuthSignatureComponents) and the vectors start from keys[i]."""
    comps = []
    for i in range(len(keys)):
        derived = hmac_sha256(keys[i], ctr_data)
        for j in range(i):
            cur = hmac_sha256(keys[j + 1], ctr_data)
            derived = hmac_sha256(cur, derived)
        comps.append(hmac_sha256(derived, data))
    return comps


def decimalize(comp, length=8):
    v = (struct.unpack(">I", comp[-4:])[0] & 0x7FFFFFFF) % (10 ** length)
    return str(v).zfill(length)


def compute_signature(version, data, keys, ctr_data):
    """Online code: 3.1+ Base64 of the last 16 bytes of each component; 3.0 decimal groups
    joined with '-'."""
    comps = signature_components(data, keys, ctr_data)
    if version == "3.0":
        return "-".join(decimalize(c) for c in comps)
    return b64e(b"".join(c[16:] for c in comps))


def compute_offline_signature(data, keys, ctr_data, length=8):
    return "-".join(decimalize(c, length) for c in signature_components(data, keys, ctr_data))


def next_ctr(ctr_data):
    """Hash-based counter: CTR_DATA' = fold(SHA256(CTR_DATA))."""
    return fold(sha256(ctr_data))


def normalized_data(method, uri_id, nonce_b64, body, app_secret_b64):
    """METHOD&B64(uriId)&NONCE(b64)&B64(body)&APP_SECRET (Computing-and-Validating-Signatures.md)."""
    return "&".join(
        [method.upper(), b64e(uri_id.encode("utf-8")), nonce_b64, b64e(body), app_secret_b64]
    ).encode("utf-8")


def auth_header(version, activation_id, app_key, nonce_b64, sig_type, signature):
    return (
        'PowerAuth pa_version="%s", pa_activation_id="%s", pa_application_key="%s", pa_nonce="%s", '
        'pa_signature_type="%s", pa_signature="%s"' % (version, activation_id, app_key, nonce_b64, sig_type, signature)
    )


def parse_header(value, prefix="PowerAuth"):
    """Parses `PowerAuth a="x", b="y"` into a dict; None when malformed."""
    if value is None:
        return None
    value = value.strip()
    if not value.startswith(prefix + " "):
        return None
    out = {}
    rest = value[len(prefix):]
    import re

    for m in re.finditer(r'([A-Za-z_]+)="([^"]*)"', rest):
        out[m.group(1)] = m.group(2)
    return out


# --------------------------------------------------------------------------------------------
# Activation status blob (Activation-Status.md)
# --------------------------------------------------------------------------------------------

STATES = {1: "CREATED", 2: "PENDING_COMMIT", 3: "ACTIVE", 4: "BLOCKED", 5: "REMOVED"}


def status_iv(transport_key, challenge, nonce):
    return kdf_internal(kdf(transport_key, 3000), challenge + nonce)


def ctr_data_hash(transport_key, ctr_data):
    return kdf_internal(kdf(transport_key, 4000), ctr_data)


def encrypt_status_blob(transport_key, challenge, nonce, state, current_version, upgrade_version,
                        ctr_byte, failed, max_failed, look_ahead, ctr_data, reserved=None):
    """Reserved bytes: random unless given (the official vectors carry random bytes there)."""
    reserved = os.urandom(5) if reserved is None else reserved
    plain = (
        b"\xde\xc0\xde\xd1"
        + bytes([state, current_version, upgrade_version])
        + reserved
        + bytes([ctr_byte & 0xFF, failed, max_failed, look_ahead])
        + ctr_data_hash(transport_key, ctr_data)
    )
    iv = status_iv(transport_key, challenge, nonce) if challenge is not None else b"\x00" * 16
    return aes_cbc_encrypt(transport_key, iv, plain, pad=False)


def decrypt_status_blob(transport_key, challenge, nonce, blob):
    iv = status_iv(transport_key, challenge, nonce) if challenge is not None else b"\x00" * 16
    p = aes_cbc_decrypt(transport_key, iv, blob, pad=False)
    if len(p) != 32 or p[:3] != b"\xde\xc0\xde" or p[3] & 0xF0 != 0xD0:
        raise ValueError("status blob has no DEC0DEDx magic")
    return {
        "magic": p[:4].hex(),
        "state": p[4],
        "stateName": STATES.get(p[4], "UNKNOWN"),
        "currentVersion": p[5],
        "upgradeVersion": p[6],
        "reserved": p[7:12],
        "ctrByte": p[12],
        "failedAttempts": p[13],
        "maxFailedAttempts": p[14],
        "ctrLookAhead": p[15],
        "ctrDataHash": p[16:32],
    }


# --------------------------------------------------------------------------------------------
# Activation fingerprint, activation code (Activation-via-Activation-Code.md, Activation-Code.md)
# --------------------------------------------------------------------------------------------


def _x_minimal(pub):
    x = pub.public_numbers().x
    return x.to_bytes((x.bit_length() + 7) // 8, "big")


def fingerprint_v3(device_pub_bytes, activation_id, server_pub_bytes):
    """decimal_8(SHA256(x(device) || activationId || x(server))), x as minimal unsigned bytes."""
    d = sha256(_x_minimal(pub_from_bytes(device_pub_bytes)) + activation_id.encode("utf-8")
               + _x_minimal(pub_from_bytes(server_pub_bytes)))
    return decimalize(d, 8)


def crc16_arc(data):
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"


def make_activation_code(random10=None):
    r = random10 if random10 is not None else os.urandom(10)
    raw = r + struct.pack(">H", crc16_arc(r))
    s = base64.b32encode(raw).decode("ascii").rstrip("=")
    return "-".join(s[i:i + 5] for i in range(0, 20, 5))


def validate_activation_code(code):
    parts = code.split("-")
    if len(parts) != 4 or any(len(p) != 5 for p in parts):
        return False
    s = "".join(parts)
    if any(c not in B32 for c in s):
        return False
    raw = base64.b32decode(s + "====")
    return crc16_arc(raw[:10]) == struct.unpack(">H", raw[10:])[0]


def verify_code_signature(master_pub_bytes, code, sig_b64):
    try:
        return ecdsa_verify_der(pub_from_bytes(master_pub_bytes), b64d(sig_b64), code.encode("utf-8"))
    except ValueError:
        return False


# --------------------------------------------------------------------------------------------
# MOBILE_SDK_CONFIG (mobile-sdk PublicTypes.cpp; powerauth-crypto docs/SDK-Configuration.md)
# --------------------------------------------------------------------------------------------


def build_config(app_key, app_secret, master_pub):
    return b64e(bytes([1, len(app_key)]) + app_key + bytes([len(app_secret)]) + app_secret
                + bytes([1, 1, len(master_pub)]) + master_pub)


def parse_config(s):
    b = b64d(s)
    if len(b) < 3 or b[0] != 1:
        raise ValueError("configuration: unknown version byte")
    i = 1
    n = b[i]; i += 1
    app_key = b[i:i + n]; i += n
    n = b[i]; i += 1
    app_secret = b[i:i + n]; i += n
    count = b[i]; i += 1
    keys = {}
    for _ in range(count):
        kid, n = b[i], b[i + 1]
        keys[kid] = b[i + 2:i + 2 + n]
        i += 2 + n
    if i != len(b) or 1 not in keys or len(app_key) != 16 or len(app_secret) != 16:
        raise ValueError("configuration: malformed")
    return {"appKey": b64e(app_key), "appSecret": b64e(app_secret), "masterPublicKey": keys[1], "keys": keys}


# --------------------------------------------------------------------------------------------
# Token digest (MAC-Token-Based-Authentication.md; powerauth-crypto TokenUtils.java)
# --------------------------------------------------------------------------------------------


def token_digest(version, token_secret, nonce, timestamp_ms):
    data = nonce + b"&" + str(timestamp_ms).encode("ascii")
    if version in ("3.2", "3.3"):
        data += b"&" + version.encode("ascii")
    return hmac_sha256(token_secret, data)


def token_header(version, token_id, token_secret, timestamp_ms=None, nonce=None, version_first=False):
    """version_first: the SDKs' order (mobile-sdk TokenCalculatorJNI.cpp, PowerAuthToken.m):
    version, token_id, token_digest, nonce, timestamp."""
    nonce = nonce or os.urandom(16)
    ts = timestamp_ms if timestamp_ms is not None else now_ms()
    d = token_digest(version, token_secret, nonce, ts)
    if version_first:
        return 'PowerAuth version="%s", token_id="%s", token_digest="%s", nonce="%s", timestamp="%s"' % (
            version, token_id, b64e(d), b64e(nonce), ts)
    return 'PowerAuth token_id="%s", token_digest="%s", nonce="%s", timestamp="%s", version="%s"' % (
        token_id, b64e(d), b64e(nonce), ts, version)


# --------------------------------------------------------------------------------------------
# Vault (Standard-RESTful-API.md vault unlock; powerauth-server VaultUnlockServiceBehavior)
# --------------------------------------------------------------------------------------------


def encrypt_vault_key(transport_key, vault_key):
    return aes_cbc_encrypt(transport_key, b"\x00" * 16, vault_key)


def decrypt_vault_key(transport_key, blob):
    return aes_cbc_decrypt(transport_key, b"\x00" * 16, blob)


# --------------------------------------------------------------------------------------------
# Temporary keys (Temporary-Encryption-Keys.md; mobile-sdk GetTemporaryKeyTask.java)
# --------------------------------------------------------------------------------------------

JWT_HS256_HEADER = b64ue(b'{"alg":"HS256","typ":"JWT"}')
JWT_ES256_HEADER = b64ue(b'{"alg":"ES256","typ":"JWT"}')


def jwt_claims_bytes(claims):
    return json.dumps(claims, separators=(",", ":")).encode("utf-8")


def hs256_key(app_secret_b64, transport_key=None):
    secret = b64d(app_secret_b64)
    return secret if transport_key is None else kdf_internal(transport_key, secret)


def jwt_hs256(claims, key, encode=None):
    """encode: the claims' JSON bytes as the sender writes them (dialect.dumps); the SDKs serialize
    the payload with their JSON writer (GetTemporaryKeyTask.java serializeJwtObject: Gson)."""
    si = JWT_HS256_HEADER + "." + b64ue((encode or jwt_claims_bytes)(claims))
    return si + "." + b64ue(hmac_sha256(key, si.encode("ascii")))


def jwt_es256(claims, priv, encode=None):
    si = JWT_ES256_HEADER + "." + b64ue((encode or jwt_claims_bytes)(claims))
    return si + "." + b64ue(der_to_jose(ecdsa_sign_der(priv, si.encode("ascii"))))


def jwt_split(jwt):
    parts = jwt.split(".")
    if len(parts) != 3 or not all(parts):
        raise ValueError("JWT must have three non-empty parts")
    return json.loads(b64ud(parts[0])), json.loads(b64ud(parts[1])), b64ud(parts[2]), (parts[0] + "." + parts[1]).encode("ascii")


def jwt_verify_hs256(jwt, key):
    header, claims, sig, si = jwt_split(jwt)
    if header.get("alg") != "HS256":
        raise ValueError("JWT alg is not HS256")
    if not hmac.compare_digest(hmac_sha256(key, si), sig):
        raise ValueError("JWT HS256 signature does not verify")
    return claims


def jwt_verify_es256(jwt, pub_bytes_):
    header, claims, sig, si = jwt_split(jwt)
    if header.get("alg") != "ES256" or header.get("typ") != "JWT":
        raise ValueError("JWT header is not ES256/JWT: %r" % header)
    if not ecdsa_verify_der(pub_from_bytes(pub_bytes_), jose_to_der(sig), si):
        raise ValueError("JWT ES256 signature does not verify")
    return claims


# --------------------------------------------------------------------------------------------
# Self-test against the official vectors
# --------------------------------------------------------------------------------------------


def _load(d, name):
    with open(os.path.join(d, name)) as f:
        return json.load(f)


def selftest(vdir):
    counts = {}

    def count(name, n):
        counts[name] = n
        print("vectors %-50s %4d passed" % (name, n))

    # KDF
    n = 0
    for c in _load(vdir, "compute-derived-keys.json")["data"]:
        m = b64d(c["input"]["masterSecretKey"])
        o = c["output"]
        k = derive_keys(m)
        assert b64e(k["possession"]) == o["signaturePossessionKey"]
        assert b64e(k["knowledge"]) == o["signatureKnowledgeKey"]
        assert b64e(k["biometry"]) == o["signatureBiometryKey"]
        assert b64e(k["transport"]) == o["transportKey"]
        assert b64e(k["vault"]) == o["vaultEncryptionKey"]
        n += 1
    count("compute-derived-keys.json", n)

    n = 0
    for c in _load(vdir, "compute-master-secret-key.json")["data"]:
        i, o = c["input"], c["output"]
        dev = priv_from_scalar(b64d(i["devicePrivateKey"])[-32:])
        srv = priv_from_scalar(b64d(i["serverPrivateKey"])[-32:])
        m1 = master_secret(dev, pub_from_bytes(b64d(i["serverPublicKey"])))
        m2 = master_secret(srv, pub_from_bytes(b64d(i["devicePublicKey"])))
        assert m1 == m2 == b64d(o["masterSecretKey"]), c
        n += 1
    count("compute-master-secret-key.json", n)

    for fname, version in (("signatures-v3.json", "3.0"), ("signatures-v31.json", "3.1")):
        n = 0
        for c in _load(vdir, fname)["data"]:
            i = c["input"]
            keys = [b64d(i["signature%sKey" % f.capitalize()]) for f in FACTOR_SETS[i["signatureType"]]]
            got = compute_signature(version, b64d(i["data"]), keys, b64d(i["counterData"]))
            assert got == c["output"]["signature"], (fname, got, c["output"])
            n += 1
        count(fname, n)

    n = 0
    for c in _load(vdir, "signatures-offline.json")["data"]:
        i = c["input"]
        keys = [b64d(i["signature%sKey" % f.capitalize()]) for f in FACTOR_SETS[i["signatureType"]]]
        got = compute_offline_signature(b64d(i["data"]), keys, b64d(i["counterData"]), int(i["signatureComponentLength"]))
        assert got == c["output"]["signature"], (got, c["output"])
        n += 1
    count("signatures-offline.json", n)

    n = 0
    for c in _load(vdir, "activation-status-blob-iv.json")["data"]:
        i = c["input"]
        assert b64e(status_iv(b64d(i["transportKey"]), b64d(i["challenge"]), b64d(i["nonce"]))) == c["output"]["iv"]
        n += 1
    count("activation-status-blob-iv.json", n)

    n = 0
    for c in _load(vdir, "activation-status-blob-data.json")["data"]:
        i, o = c["input"], c["output"]
        tk = b64d(i["transportKey"])
        s = decrypt_status_blob(tk, b64d(i["challenge"]), b64d(i["nonce"]), b64d(i["encryptedStatusBlob"]))
        assert str(s["state"]) == o["activationStatus"] and str(s["currentVersion"]) == o["currentVersion"]
        assert str(s["upgradeVersion"]) == o["upgradeVersion"] and str(s["failedAttempts"]) == o["failedAttempts"]
        assert str(s["maxFailedAttempts"]) == o["maxFailedAttempts"] and str(s["ctrLookAhead"]) == o["ctrLookAhead"]
        assert str(s["ctrByte"]) == o["ctrByte"] and b64e(s["ctrDataHash"]) == o["ctrDataHash"]
        # counterDistance: how many steps from ctrData to the hash the server reported
        ctr, dist = b64d(i["ctrData"]), None
        for d in range(100):
            if ctr_data_hash(tk, ctr) == s["ctrDataHash"]:
                dist = d
                break
            ctr = next_ctr(ctr)
        assert str(dist) == o["counterDistance"], (dist, o)
        # and our encryption reproduces the blob byte for byte
        again = encrypt_status_blob(tk, b64d(i["challenge"]), b64d(i["nonce"]), s["state"], s["currentVersion"],
                                    s["upgradeVersion"], s["ctrByte"], s["failedAttempts"], s["maxFailedAttempts"],
                                    s["ctrLookAhead"], ctr if dist is not None else b"", s["reserved"])
        assert dist is None or again == b64d(i["encryptedStatusBlob"])
        n += 1
    count("activation-status-blob-data.json", n)

    n = 0
    for c in _load(vdir, "public-key-fingerprint-v3.json")["data"]:
        i, o = c["input"], c["output"]
        assert fingerprint_v3(b64d(i["devicePublicKey"]), o["activationId"], b64d(i["serverPublicKey"])) == o["fingerprint"]
        n += 1
    count("public-key-fingerprint-v3.json", n)

    n = 0
    for c in _load(vdir, "verify-activation-data-signature-v3.json")["data"]:
        i, o = c["input"], c["output"]
        assert validate_activation_code(i["activationCode"]), i["activationCode"]
        assert verify_code_signature(b64d(i["masterPublicKey"]), i["activationCode"], o["activationSignature"])
        assert not verify_code_signature(b64d(i["masterPublicKey"]), i["activationCode"][:-1] + ("B" if i["activationCode"][-1] == "A" else "A"),
                                          o["activationSignature"])
        n += 1
    count("verify-activation-data-signature-v3.json", n)

    # ECIES raw V3.0/V3.1 (Java EciesEncryptorTest)
    ed = os.path.join(vdir, "v3-ecies")
    n = 0
    for c in _load(ed, "ecies-java-v30-v31.json")["cases"]:
        v = c["version"]
        priv = priv_from_scalar(b64d(c["serverPrivateKey"]))
        req = {"ephemeralPublicKey": c["ephemeralPublicKey"], "encryptedData": c["requestCiphertext"], "mac": c["requestMac"]}
        if c["nonce"]:
            req["nonce"] = c["nonce"]
        ctx, pt = EciesContext.server_open(v, priv, req, b64d(c["sharedInfo1"]), b64d(c["sharedInfo2"]), None)
        assert pt == b64d(c["requestPlaintext"])
        ct, mac = ctx.seal(b64d(c["responsePlaintext"]), ctx.request_nonce, None, None)
        assert b64e(ct) == c["responseCiphertext"] and b64e(mac) == c["responseMac"]
        n += 1
    count("v3-ecies/ecies-java-v30-v31.json", n)

    n = 0
    for s in _load(ed, "ecies-java-v32-v33.json")["sets"]:
        v = s["protocolVersion"]
        tk = b64d(s["transportKey"])
        for c in s["cases"]:
            act = c["scope"] == "activation"
            priv = priv_from_scalar(b64d(s["serverPrivateKey" if act else "masterServerPrivateKey"]))
            tid = s["temporaryKeyIdActivation" if act else "temporaryKeyIdApplication"]
            ad = associated_data(v, s["applicationKey"], s["activationId"] if act else None, tid)
            assert b64e(ad) == c["associatedData"], (ad, c["associatedData"])
            b = sh2_base(s["applicationSecret"], tk if act else None)
            ctx, pt = EciesContext.server_open(v, priv, c["request"], c["sharedInfo1"].encode(), b, ad)
            assert b64e(ctx.key48) == c["envelopeKey"]
            assert pt == b64d(c["plainRequest"])
            r = c["response"]
            assert ctx.open(b64d(r["encryptedData"]), b64d(r["mac"]), b64d(r["nonce"]), r["timestamp"], None) == b64d(c["plainResponse"])
            ct, mac = ctx.seal(b64d(c["plainResponse"]), b64d(r["nonce"]), r["timestamp"], None)
            assert b64e(ct) == r["encryptedData"] and b64e(mac) == r["mac"]
            n += 1
    count("v3-ecies/ecies-java-v32-v33.json", n)

    for scope in ("Application", "Activation"):
        for vv in ("30", "31", "32", "33"):
            fname = "E2ee_%s_Scope_Test_Vectors_%s.json" % (scope, vv)
            d = _load(ed, fname)
            n = 0
            for c in d[list(d)[0]]:
                v = c["protocolVersion"]
                act = scope == "Activation"
                tk = b64d(c["transportKey"]) if act else None
                b = sh2_base(c["applicationSecret"], tk)
                assert b64e(b) == c["sharedInfo2Base"]
                ad = associated_data(v, c["applicationKey"], c.get("activationId") if act else None, c.get("temporaryKeyId"))
                ctx = EciesContext(v, None, b, ad, b64d(c["envelopeKey"]), b64d(c["requestEphemeralPublicKey"]))
                nonce = b64d(c["requestNonce"]) if "requestNonce" in c else None
                ts = int(c["timestampRequest"]) if "timestampRequest" in c else None
                assert ctx.open(b64d(c["encryptedDataRequest"]), b64d(c["requestMac"]), nonce, ts, ctx.eph_pub) == c["requestData"].encode()
                rn = b64d(c["responseNonce"]) if "responseNonce" in c else nonce
                rts = int(c["timestampResponse"]) if "timestampResponse" in c else None
                assert ctx.open(b64d(c["encryptedDataResponse"]), b64d(c["responseMac"]), rn, rts, None) == c["responseData"].encode()
                ct, mac = ctx.seal(c["responseData"].encode(), rn, rts, None)
                assert b64e(mac) == c["responseMac"]
                n += 1
            count("v3-ecies/" + fname, n)

    # internal consistency of the parts without official vectors
    for _ in range(50):
        code = make_activation_code()
        assert validate_activation_code(code)
        bad = ("A" if code[0] != "A" else "B") + code[1:]
        assert not validate_activation_code(bad)
    assert validate_activation_code("VVVVV-VVVVV-VVVVV-VTFVA")  # Activation-Code.md example
    k = new_keypair()
    cfg = build_config(os.urandom(16), os.urandom(16), pub_bytes(k.public_key()))
    assert parse_config(cfg)["masterPublicKey"] == pub_bytes(k.public_key())
    total = sum(counts.values())
    print("vectors: %d cases in %d files, all passed" % (total, len(counts)))
    return total


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "selftest":
        here = os.path.dirname(os.path.abspath(__file__))
        d = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "..", "..", "shared", "vectors", "powerauth")
        selftest(d)
    else:
        print("usage: powerauth.py selftest [VECTOR_DIR]", file=sys.stderr)
        sys.exit(2)

"""How the real PowerAuth SDKs write their JSON and headers: the `--dialect` of every Python peer.

    android  Gson as the Android SDK builds it (`new GsonBuilder().create()`, mobile-sdk
             proj-android JsonSerialization.java): compact, no field whose value is null, fields in
             the declaration order of the model class (the peers build every object in that order),
             HTML-safe escaping: `<` `>` `&` `=` `'` written as \\u003c \\u003e \\u0026 \\u003d
             \\u0027 (so every Base64 padding `=` arrives escaped), U+2028/U+2029 escaped, other
             non-ASCII as UTF-8. V3 X-PowerAuth-Encryption as EciesMetadata.getHttpHeaderValue
             writes it: `PowerAuth version="3.3" application_key="..." activation_id="..."`,
             one space between the parameters, no comma.
    ios      NSJSONSerialization as the iOS SDK calls it (PA2ObjectSerialization.m, options 0):
             compact, every `/` written as `\\/` (so every Base64 `/` arrives escaped), non-ASCII as
             UTF-8, no null (an NSDictionary cannot hold nil), and NSDictionary's own key order:
             modelled as the keys sorted by their SHA-256, reversed when that happens to equal the
             declaration order, so that no ordering assumption survives. Headers with ", ".
    plain    what the peers always wrote: Python's json.dumps, compact on the client side, the
             default separators (", ", ": ") on the server side; headers with ", ".

Headers other than V3 X-PowerAuth-Encryption on Android follow the SDKs' C++ / Objective-C code
(README.md, "Dialects"): X-PowerAuth-Authorization from the core's Constants.cpp (V3) or
HttpHeaderHelper.cpp (V4) with ", "; X-PowerAuth-Token with `version` first (V3 TokenCalculatorJNI.cpp
and PowerAuthToken.m, V4 HttpHeaderHelper.cpp).

Selected with `--dialect` or the environment variable INTEROP_DIALECT (default plain).
"""
import hashlib
import json
import os

DIALECTS = ("android", "ios", "plain")

_current = os.environ.get("INTEROP_DIALECT") or "plain"
if _current not in DIALECTS:
    raise SystemExit("INTEROP_DIALECT must be one of %s, not %r" % (", ".join(DIALECTS), _current))


def set_dialect(name):
    global _current
    if name not in DIALECTS:
        raise ValueError("unknown dialect %r" % name)
    _current = name


def current():
    return _current


def _drop_nulls(o):
    if isinstance(o, dict):
        return {k: _drop_nulls(v) for k, v in o.items() if v is not None}
    if isinstance(o, list):
        return [_drop_nulls(v) for v in o]
    return o


def hash_order(keys):
    """NSDictionary's order, modelled: sorted by SHA-256 of the key, reversed if that equals the
    declaration order (a deterministic order that is never the one the peers built)."""
    keys = list(keys)
    h = sorted(keys, key=lambda k: hashlib.sha256(k.encode("utf-8")).digest())
    if len(h) > 1 and h == keys:
        h.reverse()
    return h


def _ios_order(o):
    if isinstance(o, dict):
        return {k: _ios_order(o[k]) for k in hash_order(o)}
    if isinstance(o, list):
        return [_ios_order(v) for v in o]
    return o


# Gson's HTML_SAFE_REPLACEMENT_CHARS plus the two line separators it always escapes. None of these
# characters can occur in JSON text outside a string literal, so replacing them in the text is exact.
_GSON_ESCAPES = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("=", "\\u003d"), ("'", "\\u0027"),
                 ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


def dumps(obj, dialect=None, server=False):
    """The exact bytes a peer in `dialect` sends for `obj` (a dict in declaration order)."""
    d = dialect or _current
    if d == "plain":
        if server:
            return json.dumps(obj).encode("utf-8")
        return json.dumps(obj, separators=(",", ":")).encode("utf-8")
    if d == "android":
        s = json.dumps(_drop_nulls(obj), separators=(",", ":"), ensure_ascii=False)
        for a, b in _GSON_ESCAPES:
            s = s.replace(a, b)
        return s.encode("utf-8")
    if d == "ios":
        s = json.dumps(_ios_order(_drop_nulls(obj)), separators=(",", ":"), ensure_ascii=False)
        # "/" occurs in JSON text only inside strings: NSJSONSerialization writes it as "\/"
        return s.replace("/", "\\/").encode("utf-8")
    raise ValueError("unknown dialect %r" % d)


def v3_encryption_header(version, app_key, activation_id=None, dialect=None):
    """X-PowerAuth-Encryption, V3: Android's EciesMetadata.java joins with a space (and always writes
    version 3.3, the only version SDK 1.9 speaks); iOS PowerAuthCoreEciesEncryptor.mm with ", "."""
    d = dialect or _current
    sep = " " if d == "android" else ", "
    h = 'PowerAuth version="%s"%sapplication_key="%s"' % (version, sep, app_key)
    if activation_id is not None:
        h += '%sactivation_id="%s"' % (sep, activation_id)
    return h


def sdk_headers(dialect=None):
    """True when the headers follow the SDK's code (android, ios), False for the peers' own order."""
    return (dialect or _current) != "plain"

#!/usr/bin/env python3
"""Differential tests of `securepin pq` (CPostQuantum) against Python's `cryptography`
(OpenSSL 3.5+ inside its wheel), and the PowerAuth ML-KEM-768 decapsulation vectors.

For each of ML-KEM-768, ML-KEM-1024, ML-DSA-65 and ML-DSA-87, on --seeds random seeds:
the same public key from the same seed; each side decapsulates the other's ciphertexts to
the same secret; a ciphertext with one flipped bit gives the implicit-rejection secret
J(z || c') on both sides; each side verifies the other's signatures (ours deterministic
and hedged in turn, with random messages and contexts); a signature with one flipped bit
fails on both. `cryptography` exposes neither the expanded secret keys nor deterministic
signing, so those are compared through the NIST known answers (CPostQuantum/tests).

One securepin process serves every request (JSON lines), fed by a writer thread.
Usage: interop.py --securepin PATH [--seeds N]
"""
import argparse
import base64
import hashlib
import json
import os
import random
import subprocess
import sys
import threading
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import mldsa, mlkem

KEMS = {"ML-KEM-768": mlkem.MLKEM768PrivateKey, "ML-KEM-1024": mlkem.MLKEM1024PrivateKey}
DSAS = {"ML-DSA-65": mldsa.MLDSA65PrivateKey, "ML-DSA-87": mldsa.MLDSA87PrivateKey}
DSA_PUBLIC = {"ML-DSA-65": mldsa.MLDSA65PublicKey, "ML-DSA-87": mldsa.MLDSA87PublicKey}

passed = 0
failed = 0


def check(condition, what):
    global passed, failed
    if condition:
        passed += 1
    else:
        failed += 1
        if failed <= 20:
            print(f"FAIL: {what}", file=sys.stderr)


class Tool:
    """securepin pq as a long-running process: a batch of requests in, their answers out."""

    def __init__(self, path):
        self.proc = subprocess.Popen([path, "pq"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def batch(self, requests):
        def write():
            for r in requests:
                self.proc.stdin.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
            self.proc.stdin.flush()

        writer = threading.Thread(target=write)
        writer.start()
        answers = [json.loads(self.proc.stdout.readline()) for _ in requests]
        writer.join()
        return answers

    def close(self):
        self.proc.stdin.close()
        return self.proc.wait()


def flip(data, rng):
    i = rng.randrange(len(data))
    return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1 :]


def kem_differential(tool, alg, n, rng):
    cls = KEMS[alg]
    seeds = [os.urandom(64) for _ in range(n)]
    ours = tool.batch([{"alg": alg, "op": "keygen", "seed": s.hex()} for s in seeds])
    theirs = [cls.from_seed_bytes(s) for s in seeds]
    same_keys = 0
    for s, o, t in zip(seeds, ours, theirs):
        ok = bytes.fromhex(o["ek"]) == t.public_key().public_bytes_raw()
        same_keys += ok
        check(ok, f"{alg} keygen: ek differs for seed {s.hex()}")
    # Their ciphertexts, our decapsulation; our ciphertexts (random m), their decapsulation.
    their_enc = [t.public_key().encapsulate() for t in theirs]
    flipped = [flip(ct, rng) for _, ct in their_enc]
    requests = []
    for o, (_, ct), bad in zip(ours, their_enc, flipped):
        requests += [{"op": "decaps", "dk": o["dk"], "ct": ct.hex()}, {"op": "decaps", "dk": o["dk"], "ct": bad.hex()}]
    requests += [{"alg": alg, "op": "encaps", "ek": o["ek"]} for o in ours]
    answers = tool.batch(requests)
    counts = dict(theirs_to_ours=0, ours_to_theirs=0, rejection=0)
    for i, (s, t, (ss, _), bad) in enumerate(zip(seeds, theirs, their_enc, flipped)):
        got, got_bad = bytes.fromhex(answers[2 * i]["ss"]), bytes.fromhex(answers[2 * i + 1]["ss"])
        ok = got == ss
        counts["theirs_to_ours"] += ok
        check(ok, f"{alg}: our decapsulation of their ciphertext, seed {s.hex()}")
        implicit = hashlib.shake_256(s[32:] + bad).digest(32)  # J(z || c'), z = seed[32:]
        ok = got_bad == implicit == t.decapsulate(bad) and got_bad != ss
        counts["rejection"] += ok
        check(ok, f"{alg}: implicit rejection of a flipped ciphertext, seed {s.hex()}")
        enc = answers[2 * n + i]
        ok = t.decapsulate(bytes.fromhex(enc["ct"])) == bytes.fromhex(enc["ss"])
        counts["ours_to_theirs"] += ok
        check(ok, f"{alg}: their decapsulation of our ciphertext, seed {s.hex()}")
    print(
        f"  {alg}: {n} seeds: same ek {same_keys}, their ct -> our ss {counts['theirs_to_ours']},"
        f" our ct -> their ss {counts['ours_to_theirs']}, flipped ct -> J(z||c) on both {counts['rejection']}"
    )


def their_verify(pub, sig, msg, ctx):
    try:
        pub.verify(sig, msg, ctx)
        return True
    except InvalidSignature:
        return False


def dsa_differential(tool, alg, n, rng):
    cls = DSAS[alg]
    seeds = [os.urandom(32) for _ in range(n)]
    ours = tool.batch([{"alg": alg, "op": "keygen", "seed": s.hex()} for s in seeds])
    theirs = [cls.from_seed_bytes(s) for s in seeds]
    same_keys = 0
    for s, o, t in zip(seeds, ours, theirs):
        ok = bytes.fromhex(o["pk"]) == t.public_key().public_bytes_raw()
        same_keys += ok
        check(ok, f"{alg} keygen: pk differs for seed {s.hex()}")
    msgs = [os.urandom(rng.randrange(0, 200)) for _ in range(n)]
    ctxs = [os.urandom(rng.choice([0, 1, 16, 255])) for _ in range(n)]
    their_sigs = [t.sign(m, c) for t, m, c in zip(theirs, msgs, ctxs)]
    bad_sigs = [flip(sig, rng) for sig in their_sigs]
    requests = []
    for i, o in enumerate(ours):
        common = {"msg": msgs[i].hex(), "ctx": ctxs[i].hex()}
        requests += [
            {"op": "verify", "pk": o["pk"], "sig": their_sigs[i].hex(), **common},
            {"op": "verify", "pk": o["pk"], "sig": bad_sigs[i].hex(), **common},
            {"op": "sign", "sk": o["sk"], **common, **({"rnd": "00" * 32} if i % 2 == 0 else {})},
        ]
    answers = tool.batch(requests)
    counts = dict(theirs_to_ours=0, ours_to_theirs=0, flipped=0, deterministic=0)
    for i, (s, t) in enumerate(zip(seeds, theirs)):
        ok = answers[3 * i]["ok"] is True
        counts["theirs_to_ours"] += ok
        check(ok, f"{alg}: we refuse their signature, seed {s.hex()}")
        ok = answers[3 * i + 1]["ok"] is False and not their_verify(t.public_key(), bad_sigs[i], msgs[i], ctxs[i])
        counts["flipped"] += ok
        check(ok, f"{alg}: a flipped signature bit verifies somewhere, seed {s.hex()}")
        sig = bytes.fromhex(answers[3 * i + 2]["sig"])
        ok = their_verify(t.public_key(), sig, msgs[i], ctxs[i])
        counts["ours_to_theirs"] += ok
        counts["deterministic"] += i % 2 == 0
        check(ok, f"{alg}: they refuse our signature, seed {s.hex()}")
    print(
        f"  {alg}: {n} seeds: same pk {same_keys}, their sig verified by us {counts['theirs_to_ours']},"
        f" our sig verified by them {counts['ours_to_theirs']} ({counts['deterministic']} deterministic),"
        f" flipped sig refused by both {counts['flipped']}"
    )


def powerauth_vectors(tool):
    """PowerAuth's ML-KEM-768 decapsulation vectors (Tests/Vectors/powerauth/v4, copied from upstream)."""
    root = Path(__file__).resolve().parents[2]
    path = root / "Tests" / "Vectors" / "powerauth" / "v4" / "MLKEM_768_Test_Vectors.json"
    check(path.is_file(), f"PowerAuth vectors at {path}")
    if not path.is_file():
        return
    cases = json.loads(path.read_text())["mlkem_test_vectors"]
    requests, expected, seeds = [], [], []
    for case in cases:
        der = base64.b64decode(case["pqcClientPrivateKey"])
        # The pre-standard PKCS#8 layout: ... 04 40 <64-byte seed d || z> at the end (INDEX.md).
        check(len(der) == 84 and der[18:20] == b"\x04\x40", "PKCS#8 holds a bare 64-byte seed")
        seeds.append(der[20:84])
        requests.append({"alg": "ML-KEM-768", "op": "keygen", "seed": der[20:84].hex()})
    keys = tool.batch(requests)
    answers = tool.batch(
        [
            {"op": "decaps", "dk": k["dk"], "ct": base64.b64decode(c["pqcCiphertext"]).hex()}
            for k, c in zip(keys, cases)
        ]
    )
    matched = 0
    for seed, case, answer in zip(seeds, cases, answers):
        want = base64.b64decode(case["sharedSecret"])
        ct = base64.b64decode(case["pqcCiphertext"])
        ok = bytes.fromhex(answer["ss"]) == want == mlkem.MLKEM768PrivateKey.from_seed_bytes(seed).decapsulate(ct)
        matched += ok
        check(ok, "PowerAuth MLKEM_768 vector")
    check(len(cases) > 0, "PowerAuth vectors: at least one case")
    print(f"  MLKEM_768_Test_Vectors.json: {matched} of {len(cases)} cases match (ours and cryptography's)")


def malformed(tool):
    """Malformed lines get an error answer and the tool keeps reading."""
    lines = [
        "not json",
        {"op": "keygen", "alg": "ML-KEM-512", "seed": "00" * 64},
        {"op": "keygen", "alg": "ML-KEM-768", "seed": "00" * 63},
        {"op": "encaps", "alg": "ML-KEM-768", "ek": "ff" * 1184},
        {"op": "decaps", "dk": "00" * 10, "ct": "00"},
        {"op": "sign", "alg": "ML-DSA-65", "sk": "00" * 4032, "ctx": "00" * 256},
        {"op": "verify", "alg": "ML-DSA-65", "pk": "zz", "sig": "00"},
        {"op": "nothing"},
    ]
    answers = tool.batch(lines)
    for line, answer in zip(lines, answers):
        check("error" in answer, f"malformed request answered with an error: {line}")
    alive = tool.batch([{"alg": "ML-DSA-87", "op": "keygen", "seed": "00" * 32}])[0]
    check("pk" in alive, "the tool keeps reading after malformed lines")
    print(f"  malformed requests: {sum('error' in a for a in answers)} of {len(lines)} answered with an error")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--securepin", required=True)
    parser.add_argument("--seeds", type=int, default=1000)
    args = parser.parse_args()
    import cryptography

    print(f"securepin pq against cryptography {cryptography.__version__}:")
    rng = random.Random(int.from_bytes(os.urandom(8), "big"))
    tool = Tool(args.securepin)
    for alg in KEMS:
        kem_differential(tool, alg, args.seeds, rng)
    for alg in DSAS:
        dsa_differential(tool, alg, args.seeds, rng)
    powerauth_vectors(tool)
    malformed(tool)
    check(tool.close() == 0, "securepin pq exits 0 at end of input")
    print(f"pq-interop: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

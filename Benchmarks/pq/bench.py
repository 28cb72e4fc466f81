#!/usr/bin/env python3
"""ML-KEM and ML-DSA operations per second: CPostQuantum (bench_pq, C) beside Python's
`cryptography` (its wheel's OpenSSL 3.5+), measured in the same run, with their ratio.
The Python side pays about a microsecond of call overhead per operation; its key objects
hold the expanded key, while CPostQuantum decodes the key bytes on every call.
Usage: bench.py PATH/TO/bench_pq [SECONDS]"""
import json
import os
import subprocess
import sys
import time

from cryptography.hazmat.primitives.asymmetric import mldsa, mlkem


def rate(fn, seconds):
    n, start = 0, time.perf_counter()
    while True:
        for _ in range(10):
            fn()
        n += 10
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return n / elapsed


def openssl_rates(seconds):
    out = {}
    seed64, seed32, msg, ctx = os.urandom(64), os.urandom(32), os.urandom(64), os.urandom(16)
    for alg, cls in (("ML-KEM-768", mlkem.MLKEM768PrivateKey), ("ML-KEM-1024", mlkem.MLKEM1024PrivateKey)):
        key = cls.from_seed_bytes(seed64)
        pub = key.public_key()
        _, ct = pub.encapsulate()
        out[(alg, "keygen")] = rate(lambda: cls.from_seed_bytes(seed64).public_key(), seconds)
        out[(alg, "encaps")] = rate(pub.encapsulate, seconds)
        out[(alg, "decaps")] = rate(lambda: key.decapsulate(ct), seconds)
    for alg, cls in (("ML-DSA-65", mldsa.MLDSA65PrivateKey), ("ML-DSA-87", mldsa.MLDSA87PrivateKey)):
        key = cls.from_seed_bytes(seed32)
        pub = key.public_key()
        sig = key.sign(msg, ctx)
        out[(alg, "keygen")] = rate(lambda: cls.from_seed_bytes(seed32).public_key(), seconds)
        out[(alg, "sign")] = rate(lambda: key.sign(msg, ctx), seconds)
        out[(alg, "verify")] = rate(lambda: pub.verify(sig, msg, ctx), seconds)
    return out


def main():
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 0.5
    ours = [json.loads(line) for line in subprocess.run([sys.argv[1], str(seconds)], capture_output=True, text=True, check=True).stdout.splitlines()]
    theirs = openssl_rates(seconds)
    import cryptography

    print(f"ML-KEM / ML-DSA operations per second: CPostQuantum vs cryptography {cryptography.__version__} (OpenSSL)")
    print(f"  {'algorithm':<12} {'operation':<8} {'CPostQuantum':>13} {'OpenSSL':>10} {'ratio':>7}")
    for row in ours:
        other = theirs[(row["alg"], row["op"])]
        print(f"  {row['alg']:<12} {row['op']:<8} {row['per_second']:>13,.0f} {other:>10,.0f} {row['per_second'] / other:>6.2f}x")


if __name__ == "__main__":
    main()

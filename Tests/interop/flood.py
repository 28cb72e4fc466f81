"""Unauthenticated key-request floods against `securepin server`: application-scope
`POST /pa/v3/keystore/create` requests (as the SDK writes them: an HS256 JWT under the application
secret, which every copy of the app carries) from many loopback source addresses at once.

Usage: flood.py URL CONFIG COUNT ADDRESS[,ADDRESS...] [PATH]
With FLOOD_FORWARDED_FOR set, every request carries it as `X-Forwarded-For` (as a reverse proxy at
the source address would send it). Prints one JSON object: how many answers had each status, and for the first 429 its body and
Retry-After header.
"""
import http.client
import json
import os
import sys
import threading
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import powerauth as pa  # noqa: E402


def request_body(cfg):
    claims = {"applicationKey": cfg["appKey"], "challenge": pa.b64e(os.urandom(18))}
    jwt = pa.jwt_hs256(claims, pa.hs256_key(cfg["appSecret"]))
    return json.dumps({"requestObject": {"jwt": jwt}})


def worker(url, cfg, address, count, path, results, lock):
    parsed = urllib.parse.urlparse(url)
    conn = None
    counts = {}
    first_429 = None
    for _ in range(count):
        body = request_body(cfg) if path.endswith("keystore/create") else "{}"
        for attempt in range(3):
            try:
                if conn is None:
                    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30,
                                                      source_address=(address, 0))
                headers = {"Content-Type": "application/json"}
                if os.environ.get("FLOOD_FORWARDED_FOR"):
                    headers["X-Forwarded-For"] = os.environ["FLOOD_FORWARDED_FOR"]
                conn.request("POST", path, body, headers)
                r = conn.getresponse()
                data = r.read()
                break
            except (OSError, http.client.HTTPException):
                conn = None
                if attempt == 2:
                    counts["error"] = counts.get("error", 0) + 1
                    data = None
        if data is None:
            continue
        counts[r.status] = counts.get(r.status, 0) + 1
        if r.status == 429 and first_429 is None:
            first_429 = {"body": json.loads(data), "retryAfter": r.getheader("Retry-After")}
    with lock:
        for k, v in counts.items():
            results["status"][str(k)] = results["status"].get(str(k), 0) + v
        if first_429 is not None and results.get("first429") is None:
            results["first429"] = first_429


def main():
    url, config, count, addresses = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(",")
    path = sys.argv[5] if len(sys.argv) > 5 else "/pa/v3/keystore/create"
    cfg = pa.parse_config(config)
    results = {"status": {}, "first429": None}
    lock = threading.Lock()
    per = count // len(addresses)
    threads = [threading.Thread(target=worker, args=(url, cfg, a, per, path, results, lock)) for a in addresses]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps(results))


if __name__ == "__main__":
    main()

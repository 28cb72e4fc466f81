"""A throw-away certificate authority for the deployment tests.

Usage: certs.py DIR
Writes into DIR (all 0600 for keys):
  ca.pem            the CA certificate (P-256, valid 2 days)
  server.pem/.key   a server certificate for localhost and 127.0.0.1, signed by the CA
  expired.pem/.key  the same names, signed by the CA, valid only in the past
  other-ca.pem      an unrelated CA, for "not trusted" checks
  server.pin        base64 SHA-256 of the server certificate's SubjectPublicKeyInfo
  wrong.pin         the same for an unrelated key
Nothing here is secret beyond the test; the directory is deleted with the test's work area.
"""
import base64
import datetime
import ipaddress
import os
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def key():
    return ec.generate_private_key(ec.SECP256R1())


def name(common):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def ca_cert(k, common, now):
    return (x509.CertificateBuilder().subject_name(name(common)).issuer_name(name(common))
            .public_key(k.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
            .sign(k, hashes.SHA256()))


def leaf(k, ca_key, ca, before, after):
    return (x509.CertificateBuilder().subject_name(name("localhost")).issuer_name(ca.subject)
            .public_key(k.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(before).not_valid_after(after)
            .add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))


def pin(public_key):
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    digest = hashes.Hash(hashes.SHA256())
    digest.update(der)
    return base64.b64encode(digest.finalize()).decode()


def write(path, data, secret=False):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if secret else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def main():
    out = sys.argv[1]
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, other_key, server_key, expired_key = key(), key(), key(), key()
    ca = ca_cert(ca_key, "SecurePIN test CA", now)
    pem = serialization.Encoding.PEM
    write(os.path.join(out, "ca.pem"), ca.public_bytes(pem))
    write(os.path.join(out, "other-ca.pem"), ca_cert(other_key, "Unrelated CA", now).public_bytes(pem))
    for label, k, before, after in [
        ("server", server_key, now - datetime.timedelta(hours=1), now + datetime.timedelta(days=1)),
        ("expired", expired_key, now - datetime.timedelta(days=3), now - datetime.timedelta(days=2)),
    ]:
        write(os.path.join(out, label + ".pem"), leaf(k, ca_key, ca, before, after).public_bytes(pem))
        write(os.path.join(out, label + ".key"), k.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()), secret=True)
    write(os.path.join(out, "server.pin"), (pin(server_key.public_key()) + "\n").encode())
    write(os.path.join(out, "wrong.pin"), (pin(key().public_key()) + "\n").encode())


if __name__ == "__main__":
    main()

"""Throw-away TLS material for secured local nodes: a CA and one node certificate signed by it.

Keys are PKCS#8 PEM (what Elasticsearch and OpenSearch security read); the node certificate is valid for
127.0.0.1 and localhost, for both server and client use (transport TLS presents it in both directions).
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class NodeCerts:
    """PEM bytes of a CA certificate and a node certificate/key signed by it."""

    ca_cert: bytes
    ca_key: bytes
    node_cert: bytes
    node_key: bytes


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _pkcs8(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


_KEY_USAGES = (
    "digital_signature",
    "content_commitment",
    "key_encipherment",
    "data_encipherment",
    "key_agreement",
    "key_cert_sign",
    "crl_sign",
    "encipher_only",
    "decipher_only",
)


def _key_usage(**allowed: bool) -> x509.KeyUsage:
    """A KeyUsage extension with the named usages on and every other one off."""
    return x509.KeyUsage(**{usage: allowed.get(usage, False) for usage in _KEY_USAGES})


def generate(node_name: str = "reme-es-node", days: int = 30) -> NodeCerts:
    """A new CA and a node certificate (SAN 127.0.0.1 and localhost) valid for `days` days."""
    now = _dt.datetime.now(_dt.UTC)
    not_before, not_after = now - _dt.timedelta(minutes=5), now + _dt.timedelta(days=days)

    ca_key = _key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "reme-es test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            _key_usage(digital_signature=True, key_cert_sign=True, crl_sign=True),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    node_key = _key()
    node_cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, node_name)]))
        .issuer_name(ca_name)
        .public_key(node_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            _key_usage(digital_signature=True, key_encipherment=True),
            critical=True,
        )
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(node_key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return NodeCerts(
        ca_cert=ca_cert.public_bytes(pem),
        ca_key=_pkcs8(ca_key),
        node_cert=node_cert.public_bytes(pem),
        node_key=_pkcs8(node_key),
    )

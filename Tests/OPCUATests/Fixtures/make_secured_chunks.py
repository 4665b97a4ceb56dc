"""Secured chunks written by asyncua 2.1.0 (policy Basic256Sha256), for OPCUATests.SecuredChunkTests:

- an OPN from a client to a server, signed with the client's key (PKCS#1 v1.5 SHA-256) and encrypted to the
  server's (RSA-OAEP SHA-1): OPNs are always both, whatever the mode (OPC 10000-6 §6.7.2; asyncua's own comment
  agrees). OAEP is random, so the test decrypts and verifies it rather than comparing bytes;
- a UserName token's encrypted password (as asyncua's client encrypts it for ActivateSession);
- MSG chunks from the client, symmetric: SignAndEncrypt (HMAC-SHA256 and AES-256-CBC with the keys P_SHA256 derives
  from fixed nonces) and Sign only. Deterministic: the test writes the same chunk and compares bytes.

Two test-only RSA keys (2048 bits) with self-signed certificates are made here and committed with the chunks.

    /tmp/uavenv/bin/python Tests/OPCUATests/Fixtures/make_secured_chunks.py > Tests/OPCUATests/Fixtures/secured-chunks.json
"""
import datetime
import json
from importlib.metadata import version

from asyncua import ua
from asyncua.common.connection import SecureConnection, TransportLimits
from asyncua.crypto.security_policies import SecurityPolicyBasic256Sha256
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID


def identity(name):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime(2026, 11, 28, tzinfo=datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=3650))
            .sign(key, hashes.SHA256()))
    return key, cert


client_key, client_cert = identity("vlogger test client")
server_key, server_cert = identity("vlogger test server")
client_nonce = bytes((7 * i + 1) % 256 for i in range(32))
server_nonce = bytes((13 * i + 5) % 256 for i in range(32))
opn_body = bytes(range(100))
msg_body = bytes((5 * i) % 256 for i in range(300))


def connection(mode):
    policy = SecurityPolicyBasic256Sha256(server_cert, client_cert, client_key, mode)
    # The client's keys: secret ServerNonce, seed ClientNonce (OPC 10000-6 §6.7.5).
    policy.make_local_symmetric_key(server_nonce, client_nonce)
    policy.make_remote_symmetric_key(client_nonce, server_nonce, 3600000)
    conn = SecureConnection(policy, TransportLimits(max_recv_buffer=8192, max_send_buffer=8192))
    conn.security_token.ChannelId = 5
    conn.security_token.TokenId = 9
    return conn


conn = connection(ua.MessageSecurityMode.SignAndEncrypt)
opn = conn.message_to_binary(opn_body, ua.MessageType.SecureOpen, request_id=1)
encrypted = conn.message_to_binary(msg_body, ua.MessageType.SecureMessage, request_id=2)
signed = connection(ua.MessageSecurityMode.Sign).message_to_binary(msg_body, ua.MessageType.SecureMessage, request_id=2)


# A UserName token's password as asyncua's client sends it to this server (OPC 10000-4 §7.36.2.2: the password's
# UTF-8 and the server's last nonce as one ByteString, encrypted to the server's certificate with the policy's
# asymmetric algorithm), from Client._encrypt_password's steps.
from asyncua.crypto import security_policies  # noqa: E402
from asyncua.ua.ua_binary import Primitives  # noqa: E402

password = "pässwort-42"
session_nonce = bytes((11 * i + 3) % 256 for i in range(32))
secret, algorithm = security_policies.encrypt_asymmetric(
    server_cert.public_key(), Primitives.Bytes.pack(password.encode("utf8") + session_nonce),
    SecurityPolicyBasic256Sha256.URI)


def pem(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


print(json.dumps({
    "source": f"asyncua {version('asyncua')}, cryptography {version('cryptography')}",
    "clientKeyPEM": pem(client_key), "serverKeyPEM": pem(server_key),
    "clientCertificate": client_cert.public_bytes(serialization.Encoding.DER).hex(),
    "serverCertificate": server_cert.public_bytes(serialization.Encoding.DER).hex(),
    "clientPublicKey": client_key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo).hex(),
    "clientNonce": client_nonce.hex(), "serverNonce": server_nonce.hex(),
    "opnBody": opn_body.hex(), "msgBody": msg_body.hex(),
    "opn": opn.hex(), "msgSignAndEncrypt": encrypted.hex(), "msgSign": signed.hex(),
    "password": password, "sessionNonce": session_nonce.hex(), "passwordSecret": secret.hex(),
    "passwordAlgorithm": algorithm,
}, indent=1))

"""Fixed vectors of the asymmetric cryptography of OPC UA's RSA policies, from Python `cryptography`, for
OPCUATests.AsymmetricCryptoTests: a 2048-bit test key (made once, committed here, for tests only), a PKCS#1 v1.5
SHA-256 signature (deterministic: the test's must be byte-equal), and a 300-byte message encrypted with RSA-OAEP
(SHA-1, MGF1 SHA-1: the `rsa-oaep` of Basic256Sha256 and Aes128_Sha256_RsaOaep) in blocks of k − 42 = 214 bytes.

    /tmp/uavenv/bin/python Tests/OPCUATests/Fixtures/make_rsa_vectors.py > Tests/OPCUATests/Fixtures/rsa-vectors.json
"""
import json
from importlib.metadata import version

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
message = bytes((3 * i + 11) % 256 for i in range(300))
signature = key.sign(message, padding.PKCS1v15(), hashes.SHA256())
oaep = padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA1()), algorithm=hashes.SHA1(), label=None)
block = key.key_size // 8 - 42
ciphertext = b"".join(key.public_key().encrypt(message[i:i + block], oaep) for i in range(0, len(message), block))
print(json.dumps({
    "source": f"cryptography {version('cryptography')}",
    "privateKeyPEM": key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode(),
    "publicKeyDER": key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo).hex(),
    "message": message.hex(),
    "signature": signature.hex(),
    "ciphertext": ciphertext.hex(),
}, indent=1))

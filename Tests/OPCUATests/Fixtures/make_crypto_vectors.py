"""Fixed vectors of the symmetric cryptography of OPC UA's RSA policies, from implementations nobody here wrote:
Python `cryptography` (HMAC-SHA256, AES-CBC) and asyncua 2.1.0's `uacrypto.p_sha256` (the key derivation), for
OPCUATests.SecurityPolicyTests.

    /tmp/uavenv/bin/python Tests/OPCUATests/Fixtures/make_crypto_vectors.py > Tests/OPCUATests/Fixtures/crypto-vectors.json

P_SHA256 is RFC 5246 §5's P_hash with HMAC-SHA256 (OPC 10000-6 §6.7.5 derives the channel's keys with it); the
script computes it twice, with asyncua's function and with the RFC's definition over `cryptography`'s HMAC, and
stops if the two disagree. The nonces are fixed byte patterns, not secrets.
"""
import json
from importlib.metadata import version

from asyncua.crypto import uacrypto
from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes


def hmac_sha256(key, data):
    h = hmac.HMAC(key, hashes.SHA256())
    h.update(data)
    return h.finalize()


def p_sha256(secret, seed, size):
    out, a = b"", seed
    while len(out) < size:
        a = hmac_sha256(secret, a)
        out += hmac_sha256(secret, a + seed)
    return out[:size]


client_nonce = bytes((7 * i + 1) % 256 for i in range(32))
server_nonce = bytes((13 * i + 5) % 256 for i in range(32))
vectors = {"source": f"cryptography {version('cryptography')}, asyncua {version('asyncua')} uacrypto.p_sha256",
           "clientNonce": client_nonce.hex(), "serverNonce": server_nonce.hex(), "policies": []}
for name, sig, enc in [("Basic256Sha256", 32, 32), ("Aes128_Sha256_RsaOaep", 32, 16)]:
    sizes = (sig, enc, 16)
    # Client keys: secret ServerNonce, seed ClientNonce; server keys: the other way round (OPC 10000-6 §6.7.5).
    client = p_sha256(server_nonce, client_nonce, sum(sizes))
    server = p_sha256(client_nonce, server_nonce, sum(sizes))
    assert b"".join(uacrypto.p_sha256(server_nonce, client_nonce, sizes)) == client
    assert b"".join(uacrypto.p_sha256(client_nonce, server_nonce, sizes)) == server
    message = bytes(range(64)) * 2  # 128 bytes: whole AES blocks
    c_sign, c_enc, c_iv = client[:sig], client[sig:sig + enc], client[sig + enc:]
    enc_cipher = Cipher(algorithms.AES(c_enc), modes.CBC(c_iv)).encryptor()
    vectors["policies"].append({
        "name": name,
        "clientKeys": client.hex(), "serverKeys": server.hex(),
        "message": message.hex(),
        "clientSignature": hmac_sha256(c_sign, message).hex(),
        "clientCiphertext": (enc_cipher.update(message) + enc_cipher.finalize()).hex(),
    })
print(json.dumps(vectors, indent=1))

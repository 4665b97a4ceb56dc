#!/usr/bin/env python3
"""An independent check of vlogger's originality-signature verification, with python-ecdsa (PyPI `ecdsa`).

    python3 originality_check.py N

1. Prints the secp128r1 domain parameters as python-ecdsa has them (`curve p a b gx gy n`, hex).
2. Verifies the real signatures of Proxmark3's tools/recover_pk.py with python-ecdsa, each as the scheme says
   (NXP: the UID least-significant byte first, unhashed; ST TruST25: SHA-256 of the UID most-significant byte
   first), and checks that one flipped bit fails; prints `sample UID ok`.
3. Signs N random messages with N random keys, unhashed (an 8-byte digest, as NXP) and hashed (SHA-256, as ST),
   and prints each as `signed PUBLIC_KEY DIGEST SIGNATURE` (hex; the public key uncompressed, 04 first; the
   signature r || s) for vlogger's verifier to check. Exit 1 when anything does not verify here.
"""
import hashlib
import os
import sys

import ecdsa
from ecdsa.util import sigencode_string, sigdecode_string

CURVE = ecdsa.curves.SECP128r1

NXP_KEY = "048878A2A2D3EEC336B4F261A082BD71F9BE11C4E2E896648B32EFA59CEA6E59F0"
ST_KEY = "04101E188A8B4CDDBC62D5BC3E0E6850F0C2730E744B79765A0E079907FBDB01BC"
NXP = [
    ("E0040118009B5FEE", "32D9E7579CD77E6F1FA11419231E874826984C5F189FDE1421684563A9663377"),
    ("E00401082AD28E83", "CAE8183CB4823C765AFDEB78C9D66C959990FD52A5820E76E1D6E025D76EAD79"),
    ("E00401086FC2621F", "9F47BF33D9ED62A62AFEF5685BC4006CFB290C344EAD5C5B49BF976804A9EE62"),
]
ST = [
    ("E00208000A227AAA", "FE458A550ACD30B45B9C4D10676FC63E30AC69027217547FBDF04A8F7942AD3B"),
    ("E00208000A17DB6E", "B3ED5025F16455AAC6012CA1C1FC5F94F8C805AF1EF6A86B646081C9916CDD2E"),
    ("E00208000A174F60", "AB42F1FA68D7470F91D4ED77C4D951B1B4AAB006812BE194BFEB7AAE48E4FA45"),
]


def key(hexkey):
    return ecdsa.VerifyingKey.from_string(bytes.fromhex(hexkey), curve=CURVE)


def verifies(vk, signature, digest):
    try:
        return vk.verify_digest(signature, digest, sigdecode=sigdecode_string, allow_truncate=True)
    except ecdsa.BadSignatureError:
        return False


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    c = CURVE.curve
    g = CURVE.generator
    print("curve %x %x %x %x %x %x" % (c.p(), c.a() % c.p(), c.b(), g.x(), g.y(), CURVE.order))
    failed = False
    for samples, hexkey, message in [
        (NXP, NXP_KEY, lambda uid: bytes.fromhex(uid)[::-1]),
        (ST, ST_KEY, lambda uid: hashlib.sha256(bytes.fromhex(uid)).digest()),
    ]:
        vk = key(hexkey)
        for uid, sig in samples:
            signature = bytes.fromhex(sig)
            flipped = bytes([signature[0] ^ 0x01]) + signature[1:]
            good = verifies(vk, signature, message(uid))
            bad = verifies(vk, flipped, message(uid))
            print("sample %s %s" % (uid, "ok" if good and not bad else "FAILED"))
            failed |= not good or bad
    for i in range(n):
        sk = ecdsa.SigningKey.generate(curve=CURVE)
        public = b"\x04" + sk.get_verifying_key().to_string()
        message = os.urandom(8)
        digest = message if i % 2 == 0 else hashlib.sha256(message).digest()
        signature = sk.sign_digest(digest, sigencode=sigencode_string, allow_truncate=True)
        failed |= not verifies(sk.get_verifying_key(), signature, digest)
        print("signed %s %s %s" % (public.hex(), digest.hex(), signature.hex()))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

import ISO15693
import Readers
import TagSecurity

/// Reads a tag's originality signature the way its chip keeps it and verifies it offline
/// (docs/reference/originality-signatures.md): NXP READ SIGNATURE (0xBD) for the ICODE SLIX2, DNA and 3 (and
/// NTAG 5); the TruST25 blocks 0x3F–0x4F for the ST25TV02KC/512C. Only reads: never a password, never a write.
public enum OriginalityCheck {
    /// The verdict for `uid`; throws only when the tag did not answer cleanly (no answer, a garbled one): the
    /// check is worth repeating then, while a verdict holds for the chip for ever (a signature does not change).
    public static func check(_ client: ISO15693Client, _ uid: UID, model: ICModel?) throws(ClientError)
        -> Originality.Verdict
    {
        guard let scheme = Originality.scheme(for: uid, model: model) else {
            return .notOnThisChip(
                "\(model?.name ?? "this chip (\(uid.manufacturer))") has no originality signature vlogger can check")
        }
        switch scheme {
        case .nxpReadSignature:
            let answer: [UInt8]
            do {
                answer = try client.custom(uid, code: NXPSecurity.readSignature, manufacturer: .nxp)
            } catch {
                if error.isTransient { throw error }
                return .missing("READ SIGNATURE: \(error)")
            }
            return Originality.verify(uid, signature: answer, scheme: scheme)
        case .stTruST25:
            let blocks: [BlockRead]
            do {
                blocks = try client.readBlocks(uid, first: 0x3F, count: 17)
            } catch {
                if error.isTransient { throw error }
                return .missing("blocks 0x3F–0x4F: \(error)")
            }
            switch Originality.trust25Signature(Array(blocks.map(\.data).joined())) {
            case .success(let signature): return Originality.verify(uid, signature: signature, scheme: scheme)
            case .failure(let verdict): return verdict
            }
        }
    }
}

// Signed and encrypted chunks (OPC 10000-6 §6.7.2.5 and §6.7.2.6): what a chunk's signature covers, the padding
// that makes whole cipher blocks, and the order of the steps. An OPN is signed with the sender's RSA key and
// encrypted to the receiver's whatever the mode; MSG and CLO use the channel's symmetric keys: signed in Sign,
// signed and encrypted in SignAndEncrypt.

/// How one side secures the chunks it sends and opens the chunks it receives.
public struct ChunkCrypto: Sendable {
    let signatureSize: Int
    let sign: @Sendable ([UInt8]) throws(SecurityPolicy.CryptoError) -> [UInt8]
    /// Encryption of what is sent: plaintext and ciphertext block sizes (nil: not encrypted).
    let encryption: (plain: Int, cipher: Int)?
    let encrypt: @Sendable ([UInt8]) throws(SecurityPolicy.CryptoError) -> [UInt8]
    let peerSignatureSize: Int
    let verify: @Sendable ([UInt8], [UInt8]) -> Bool
    /// Decryption of what is received: its ciphertext block size (nil: not encrypted), and whether the sender
    /// added the extra padding byte (its encryption block, our key, over 256 bytes).
    let decryption: (cipher: Int, extraPadding: Bool)?
    let decrypt: @Sendable ([UInt8]) throws(SecurityPolicy.CryptoError) -> [UInt8]

    /// Policy None: nothing signed, nothing encrypted.
    public static let none = ChunkCrypto(
        signatureSize: 0, sign: { _ in [] }, encryption: nil, encrypt: { $0 }, peerSignatureSize: 0,
        verify: { _, _ in true }, decryption: nil, decrypt: { $0 })

    /// An OPN's: signed with `own` key (its size the signature's), encrypted to `peer` in blocks of k − 42
    /// plaintext bytes; received ones decrypted with `own` key and verified with `peer`'s.
    public static func asymmetric(own: RSAKeyPair, peer: RSAPublicKey) -> ChunkCrypto {
        ChunkCrypto(
            signatureSize: own.size,
            sign: { data throws(SecurityPolicy.CryptoError) in try AsymmetricCrypto.sign(data, with: own) },
            encryption: (AsymmetricCrypto.plaintextBlockSize(peer), peer.size),
            encrypt: { data throws(SecurityPolicy.CryptoError) in try AsymmetricCrypto.encrypt(data, to: peer) },
            peerSignatureSize: peer.size, verify: { AsymmetricCrypto.verify($0, signature: $1, key: peer) },
            decryption: (own.size, own.size > 256),
            decrypt: { data throws(SecurityPolicy.CryptoError) in try AsymmetricCrypto.decrypt(data, with: own) })
    }

    /// MSG and CLO chunks': signed with the `local` keys (HMAC-SHA256, 32 bytes) and, with `encrypt`, encrypted
    /// with them (AES-CBC, 16-byte blocks); received ones verified and decrypted with the `remote` keys.
    public static func symmetric(local: SecurityPolicy.Keys, remote: SecurityPolicy.Keys, encrypt: Bool) -> ChunkCrypto
    {
        ChunkCrypto(
            signatureSize: 32, sign: { SecurityPolicy.sign($0, key: local.signing) },
            encryption: encrypt ? (16, 16) : nil,
            encrypt: { data throws(SecurityPolicy.CryptoError) in try SecurityPolicy.encrypt(data, keys: local) },
            peerSignatureSize: 32, verify: { SecurityPolicy.verify($0, signature: $1, key: remote.signing) },
            decryption: encrypt ? (16, false) : nil,
            decrypt: { data throws(SecurityPolicy.CryptoError) in try SecurityPolicy.decrypt(data, keys: remote) })
    }
}

extension SecureChunk {
    /// The chunk as sent with `crypto`: the sequence header and body, padded to whole blocks when encrypted (a
    /// PaddingSize byte and as many bytes of that value, and a high byte when the cipher block is over 256
    /// bytes), signed over everything before the signature (the message header with its final size included),
    /// then the plaintext and signature encrypted.
    public func sealed(with crypto: ChunkCrypto) throws(SecurityPolicy.CryptoError) -> [UInt8] {
        let security = securityBytes
        var plain = BinaryWriter(capacity: body.count + 64)
        plain.write(sequenceNumber)
        plain.write(requestId)
        plain.append(raw: body)
        var text = plain.bytes
        var size = text.count + crypto.signatureSize
        if let e = crypto.encryption {
            let extra = e.cipher > 256 ? 2 : 1
            let rem = (text.count + crypto.signatureSize + extra) % e.plain
            let pad = rem == 0 ? 0 : e.plain - rem
            text += [UInt8](repeating: UInt8(truncatingIfNeeded: pad), count: pad + 1)
            if extra == 2 { text.append(UInt8(truncatingIfNeeded: pad >> 8)) }
            size = (text.count + crypto.signatureSize) / e.plain * e.cipher
        }
        let messageHeader = MessageHeader(
            kind: header.kind, chunk: header.chunk, size: UInt32(clamping: MessageHeader.length + security.count + size)
        ).bytes
        let signature = try crypto.sign(messageHeader + security + text)
        let tail = crypto.encryption == nil ? text + signature : try crypto.encrypt(text + signature)
        return messageHeader + security + tail
    }

    /// A chunk received on a channel secured with `crypto`: decrypted, its signature verified over what the
    /// sender signed, its padding checked and removed. A failure is Bad_SecurityChecksFailed.
    public init(_ bytes: [UInt8], opening crypto: ChunkCrypto) throws(TransportError) {
        // The headers as policy None reads them; the rest is the secured part.
        var plain = try SecureChunk(bytes)
        let headerLength = MessageHeader.length + plain.securityBytes.count
        guard headerLength <= bytes.count else {
            throw TransportError(.badDecodingError, "a chunk shorter than its headers")
        }
        let prefix = Array(bytes[0..<headerLength])
        var secured = Array(bytes[headerLength...])
        func failed(_ why: String) -> TransportError { TransportError(.badSecurityChecksFailed, why) }
        if let d = crypto.decryption {
            guard !secured.isEmpty, secured.count % d.cipher == 0 else {
                throw failed("\(secured.count) encrypted bytes are not whole \(d.cipher)-byte blocks")
            }
            do { secured = try crypto.decrypt(secured) } catch { throw failed("decryption: \(error)") }
        }
        guard secured.count >= crypto.peerSignatureSize + 8 else { throw failed("a chunk shorter than its signature") }
        let signed = Array(secured[0..<(secured.count - crypto.peerSignatureSize)])
        let signature = Array(secured[(secured.count - crypto.peerSignatureSize)...])
        guard crypto.verify(prefix + signed, signature) else { throw failed("the signature does not verify") }
        var text = signed
        if let d = crypto.decryption {
            guard let last = text.last else { throw failed("no padding") }
            let high = d.extraPadding ? Int(last) : 0
            let low = d.extraPadding ? (text.count >= 2 ? text[text.count - 2] : 0) : last
            let count = (high << 8 | Int(low)) + 1 + (d.extraPadding ? 1 : 0)
            guard count <= text.count - 8 else { throw failed("padding of \(count) bytes in \(text.count)") }
            let padding = text[(text.count - count)..<(text.count - (d.extraPadding ? 1 : 0))]
            guard padding.allSatisfy({ $0 == low }) else { throw failed("padding bytes that are not its size") }
            text.removeLast(count)
        }
        var r = BinaryReader(text)
        do throws(DecodingError) {
            plain.sequenceNumber = try r.readUInt32()
            plain.requestId = try r.readUInt32()
        } catch { throw TransportError(.badDecodingError, "the sequence header: \(error.detail)") }
        plain.body = Array(text[8...])
        self = plain
    }
}

extension ChunkCrypto {
    /// The most body bytes one chunk carries in a buffer of `bufferSize` bytes behind headers of `headerLength`
    /// (message, channel id and security header): the sequence header, the signature and, when encrypted, the
    /// padding's size byte(s) come off, and whole cipher blocks fit.
    public func maxBodySize(bufferSize: Int, headerLength: Int) -> Int {
        let room = bufferSize - headerLength
        guard let e = encryption else { return room - 8 - signatureSize }
        let plain = room / e.cipher * e.plain
        return plain - 8 - signatureSize - (e.cipher > 256 ? 2 : 1)
    }
}

extension SecureChunk {
    /// The message header, channel id and security header's length: what comes before the secured part.
    public var headerLength: Int { MessageHeader.length + securityBytes.count }
}

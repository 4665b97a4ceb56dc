import FieldState
import Foundation
import ISO15693
import NIOConcurrencyHelpers
import OPCUA
import OPCUAServer
import TestDrivers
import Testing
import VLoggerCore
import VLoggerModel

@testable import VLoggerOPCUA

/// `[opcua]` as the configuration reads it, the PKI folder on disk, and the gateway's namespace over a field
/// state (docs/opcua.md says what each does).
@Suite(.drivers)
struct VLoggerOPCUATests {
    static let base = "[gateway]\nid = \"gw-7\"\n"

    @Test func theSectionAndItsDefaults() throws {
        let config = try AgentConfig.parse(Self.base + "[opcua]\nusers-file = \"users\"\n", file: "/etc/vlogger/x.toml")
        let s = try #require(config.outputs.compactMap { $0 as? OPCUASettings }.first)
        #expect(s.listen.host == "127.0.0.1" && s.listen.port == 4840)  // loopback; OPC UA's registered port
        #expect(s.endpointSecurity == EndpointSecurity.all)
        #expect(s.usersFile == "/etc/vlogger/users")
        #expect(s.pkiFolder(store: "/var/lib/vlogger/vlogger.db").path == "/var/lib/vlogger/opcua-pki")
        // A server is no outbox consumer: the outputs the service pumps leave it out.
        #expect(config.outputs.consumers.isEmpty && config.outputs.servers.count == 1)
        let only = try AgentConfig.parse(
            Self.base
                + "[opcua]\nsecurity = [\"Basic256Sha256 SignAndEncrypt\"]\nanonymous = false\nusers-file = \"u\"\n",
            file: "/tmp/x.toml")
        let o = try #require(only.outputs.compactMap { $0 as? OPCUASettings }.first)
        #expect(o.endpointSecurity == [EndpointSecurity(.basic256Sha256, .signAndEncrypt)] && !o.anonymous)
        #expect(o.warnings(file: "x.toml").isEmpty && s.warnings(file: "x.toml").isEmpty)
        let open = try AgentConfig.parse(
            Self.base + "[opcua]\nlisten = \"0.0.0.0:4840\"\nallow-unsecured = true\n", file: "/tmp/x.toml")
        let a = try #require(open.outputs.compactMap { $0 as? OPCUASettings }.first)
        #expect(a.warnings(file: "x.toml").first?.contains("security None to anonymous clients") == true)
    }

    @Test func wrongSettingsAreErrorsWithTheirLines() {
        func issues(_ text: String) -> [String] {
            do { _ = try AgentConfig.parse(Self.base + text, file: "/tmp/x.toml"); return [] } catch {
                return error.issues.map(\.message)
            }
        }
        #expect(issues("[opcua]\nsecurity = [\"Basic256\"]\n").contains { $0.contains("deprecated and not offered") })
        #expect(issues("[opcua]\nsecurity = []\n").contains { $0.contains("opcua.security: empty") })
        #expect(issues("[opcua]\nlisten = \"4840\"\n").contains { $0.contains("opcua.listen") })
        #expect(issues("[opcua]\nanonymous = false\n").contains { $0.contains("needs users-file") })
        #expect(issues("[opcua]\nport = 4840\n").contains { $0.contains("unknown key 'port' in [opcua]") })
        // None on a network address only when said so.
        #expect(issues("[opcua]\nlisten = \"0.0.0.0:4840\"\n").contains { $0.contains("allow-unsecured = true") })
        #expect(
            issues("[opcua]\nlisten = \"0.0.0.0:4840\"\nsecurity = [\"Basic256Sha256 SignAndEncrypt\"]\n").isEmpty)
    }

    @Test func thePKIFolderMakesItsCertificateOnceAndKeepsTrust() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pki-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let pki = PKIFolder(path: dir.path)
        let made = try pki.identity(applicationUri: "urn:vlogger:gw-7", hosts: ["gw-7", "10.0.0.7"])
        #expect(made.certificate.applicationUri == "urn:vlogger:gw-7")
        #expect(made.certificate.hostNames.contains("10.0.0.7"))
        // Kept across starts, whatever the hosts now (the start warns of a host it lacks: missingHosts).
        let again = try pki.identity(applicationUri: "urn:vlogger:gw-7", hosts: ["gw-7.plant.example"])
        #expect(again.certificate.fingerprint == made.certificate.fingerprint)
        #expect(pki.missingHosts(["GW-7", "gw-7.plant.example"], in: again.certificate) == ["gw-7.plant.example"])
        let keyMode = try FileManager.default.attributesOfItem(atPath: dir.path + "/own/key.pem")[.posixPermissions]
        #expect((keyMode as? Int) == 0o600)
        // Another ApplicationUri: every client would refuse the certificate (OPC 10000-4 §5.6.2), so the start
        // stops and says how to renew it.
        #expect(throws: VLoggerError.self) { try pki.identity(applicationUri: "urn:other", hosts: ["gw-7"]) }
        do {
            _ = try pki.identity(applicationUri: "urn:other", hosts: ["gw-7"])
        } catch { #expect("\(error)".contains("vlogger opcua renew"), "\(error)") }
        // Renewed: a new key and certificate for the new URI and hosts; the old pair kept beside, the key 0600.
        let (old, renewed) = try pki.renew(applicationUri: "urn:other", hosts: ["gw-7.plant.example"])
        #expect(old?.fingerprint == made.certificate.fingerprint)
        #expect(renewed.certificate.fingerprint != made.certificate.fingerprint)
        #expect(renewed.certificate.applicationUri == "urn:other")
        #expect(renewed.certificate.hostNames.contains("gw-7.plant.example"))
        #expect(try pki.identity(applicationUri: "urn:other", hosts: []).certificate.der == renewed.certificate.der)
        let kept = try FileManager.default.contentsOfDirectory(atPath: dir.path + "/own").sorted()
        #expect(kept.count == 4 && kept.filter { $0.hasPrefix("cert-") || $0.hasPrefix("key-") }.count == 2, "\(kept)")
        let oldKey = try #require(kept.first { $0.hasPrefix("key-") })
        let oldMode = try FileManager.default.attributesOfItem(atPath: dir.path + "/own/" + oldKey)[.posixPermissions]
        #expect((oldMode as? Int) == 0o600)
        // A refused client is kept, trusted by a fingerprint prefix, untrusted again.
        let clientKey = try RSAKeyPair(bits: 2048)
        let client = try ApplicationCertificate.make(
            key: clientKey, applicationUri: "urn:scada", applicationName: "SCADA-1", hosts: ["scada"],
            notBefore: Date().addingTimeInterval(-60))
        pki.reject(client)
        #expect(pki.list().map(\.trusted) == [false])
        #expect(throws: VLoggerError.self) { try pki.trust("ABC") }
        _ = try pki.trust(String(client.fingerprint.prefix(10)))
        #expect(pki.trustedFingerprints() == [client.fingerprint])
        _ = try pki.untrust(client.fingerprint)
        #expect(pki.trustedFingerprints().isEmpty && pki.list().map(\.trusted) == [false])
        // By the SHA-1 thumbprint a client shows (UaExpert, Ignition), colons and all.
        let sha1 = client.thumbprintHex.enumerated().map {
            $0.offset > 0 && $0.offset % 2 == 0 ? ":\($0.element)" : "\($0.element)"
        }
        .joined()
        _ = try pki.trust(String(sha1.prefix(23)).lowercased())
        #expect(pki.trustedFingerprints() == [client.fingerprint])
    }

    @Test func theGatewayNamespaceFollowsTheFieldState() async throws {
        let uid = try UID(0xE004_0150_1234_5678)
        let state = FieldState(
            readers: [FieldState.Reader(id: "dock-3", location: "Dock door 3", intervalMs: 1000)],
            units: ["temperature": "°C"])
        let space = try AddressSpace.standard(applicationUri: "urn:vlogger:gw-7")
        let events = NIOLockedValueBox<[ServerEvent]>([])
        let ns = GatewayNamespace(
            space: space, state: state, gateway: "gw-7", site: "Hall 2",
            post: { e in events.withLockedValue { $0.append(e) } })
        #expect(
            space.namespaces == [
                "http://opcfoundation.org/UA/", "urn:vlogger:gw-7", "http://opcfoundation.org/UA/DI/",
                "http://opcfoundation.org/UA/AutoID/", "urn:vlogger:gateway:gw-7",
            ])
        let now = DateTime(millisecondsSince1970: 1_800_000_000_000)
        #expect(space.read(ns.id("Gateway/Site"), 13, now: now).value == .scalar(.string("Hall 2")))
        #expect(space.read(ns.id("Readers/dock-3/Location"), 13, now: now).value == .scalar(.string("Dock door 3")))
        state.eventRecorded(
            Event(
                time: 1_800_000_000_000, gateway: "gw-7", reader: "dock-3", uid: uid, kind: .arrival, name: "",
                severity: .info, detail: ""), asset: nil)
        state.readingTaken(
            Reading(
                time: 1_800_000_000_500, gateway: "gw-7", reader: "dock-3", uid: uid, first: 0xF8, count: 1,
                data: [0, 0, 0, 0], decoded: [("temperature", .number(4.5))]),
            asset: nil)
        // The namespace applies changes on a queue of its own.
        var value = DataValue()
        for _ in 0..<200 {
            value = space.read(ns.id("Tags/\(uid)/temperature"), 13, now: now)
            if value.value != nil { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(value.value == .scalar(.double(4.5)))
        #expect(value.sourceTimestamp == DateTime(millisecondsSince1970: 1_800_000_000_500))
        // °C: an AnalogUnitType (i=17497) with EngineeringUnits, UNECE's CEL (UnitId 4408652, OPC 10000-8 §5.6.3;
        // docs/reference/opcua.md, "Engineering units").
        #expect(space.node(ns.id("Tags/\(uid)/temperature"))?.typeDefinition == NodeId(17497))
        let units = space.read(ns.id("Tags/\(uid)/temperature/EngineeringUnits"), 13, now: now).value
        guard case .scalar(.extensionObject(let e))? = units else {
            Issue.record("no EngineeringUnits: \(String(describing: units))")
            return
        }
        let info = try EUInformation(e)
        #expect(info.namespaceUri == "http://www.opcfoundation.org/UA/units/un/cefact")
        #expect(info.unitId == 4_408_652 && info.displayName == LocalizedText("°C"))
        // The reader as AutoID's RfidReaderDeviceType (AutoID ns=1;i=1003, here 3) under DI's DeviceSet (DI i=5001,
        // here 2), a component of it (OPC 10000-100 §4.9), with DI's mandatory properties in DI's namespace and
        // AutoID's in AutoID's (OPC 30010 §6.2: DeviceName, AutoIdModelVersion, DeviceStatus are mandatory).
        let device = try #require(space.node(ns.id("DeviceSet/dock-3")))
        #expect(device.typeDefinition == NodeId(1003, namespace: 3))
        #expect(
            space.node(NodeId(5001, namespace: 2))?.references.contains(
                Reference(ReferenceTypeIds.hasComponent, device.id)) == true)
        func child(_ path: String) -> DataValue { space.read(ns.id("DeviceSet/dock-3/\(path)"), 13, now: now) }
        #expect(
            space.node(ns.id("DeviceSet/dock-3/Manufacturer"))?.browseName
                == QualifiedName(namespace: 2, "Manufacturer"))
        #expect(
            space.node(ns.id("DeviceSet/dock-3/DeviceName"))?.browseName == QualifiedName(namespace: 3, "DeviceName"))
        for path in [
            "Manufacturer", "Model", "SerialNumber", "HardwareRevision", "SoftwareRevision", "DeviceRevision",
            "DeviceManual", "RevisionCounter", "DeviceName", "AutoIdModelVersion", "DeviceStatus",
        ] {
            #expect(space.node(ns.id("DeviceSet/dock-3/\(path)")) != nil, "\(path)")
        }
        #expect(child("DeviceName").value == .scalar(.string("dock-3")))
        #expect(child("AutoIdModelVersion").value == .scalar(.string("1.01")))
        #expect(child("DeviceStatus").value == .scalar(.int32(0)))  // Idle: the reader answers
        #expect(child("DeviceLocationName").value == .scalar(.string("Dock door 3")))
        // The last tag to arrive, most significant byte first as the UID is printed, and when.
        #expect(child("LastScanData").value == .scalar(.byteString([0xE0, 0x04, 0x01, 0x50, 0x12, 0x34, 0x56, 0x78])))
        #expect(
            child("LastScanTimestamp").value == .scalar(.dateTime(DateTime(millisecondsSince1970: 1_800_000_000_000))))
        // The same as flat variables of the reader, for a PLC.
        #expect(space.read(ns.id("Readers/dock-3/LastUid"), 13, now: now).value == .scalar(.string("E004015012345678")))
        #expect(
            space.read(ns.id("Readers/dock-3/LastUidBytes"), 13, now: now).value
                == .scalar(.byteString([0xE0, 0x04, 0x01, 0x50, 0x12, 0x34, 0x56, 0x78])))
        #expect(child("Diagnostics/Presence").value == .scalar(.uInt16(0)))  // no cycle has reported tags yet
        // TagTypes is declared by RfidReaderDeviceType's RuntimeParameters, CodeTypes by AutoIdDeviceType's: the
        // instance has both (a subtype's declaration adds to its supertype's, OPC 10000-3 §6.3.3).
        #expect(child("RuntimeParameters/TagTypes").value == .array(.uInt32, [.uInt32(0)]))
        #expect(
            child("RuntimeParameters/TagTypes/EnumStrings").value
                == .array(.localizedText, [.localizedText(LocalizedText("ISO 15693"))]))
        #expect(child("RuntimeParameters/CodeTypes").value == .array(.uInt32, [.uInt32(0)]))
        #expect(
            child("RuntimeParameters/CodeTypes/EnumStrings").value
                == .array(.localizedText, [.localizedText(LocalizedText("UID"))]))
        // An optional member not asked for is not there.
        #expect(space.node(ns.id("DeviceSet/dock-3/LastScanRSSI")) == nil)
        #expect(events.withLockedValue { $0 }.contains { $0.message.contains("arrived") && $0.severity == 100 })
        state.eventRecorded(
            Event(
                time: 1_800_000_001_000, gateway: "gw-7", reader: "dock-3", uid: uid, kind: .departure, name: "",
                severity: .info, detail: ""), asset: nil)
        for _ in 0..<200 where space.node(ns.id("Tags/\(uid)")) != nil { try await Task.sleep(for: .milliseconds(10)) }
        #expect(space.node(ns.id("Tags/\(uid)")) == nil)
        #expect(space.node(ns.id("Tags/\(uid)/temperature")) == nil)
        #expect(space.node(ns.id("Tags/\(uid)/temperature/EngineeringUnits")) == nil)
    }
}

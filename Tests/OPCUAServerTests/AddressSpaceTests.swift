import Foundation
import OPCUA
import Testing

@testable import OPCUAServer

/// The generated nodes (tools/opcua/nodeset.py from the OPC Foundation's NodeSet2 files at a2d4ae8): namespace 0's
/// part and the DI model, and the DataTypeDefinition attribute the generator builds from each type's <Definition>.
struct AddressSpaceTests {
    let space: AddressSpace
    let now = DateTime(millisecondsSince1970: 1_800_000_000_000)

    init() throws { space = try AddressSpace.standard(applicationUri: "urn:vlogger:test") }

    func structure(_ id: NodeId) throws -> StructureDefinition {
        let value = space.read(id, AttributeId.dataTypeDefinition.rawValue, now: now)
        guard case .scalar(.extensionObject(let e))? = value.value, e.typeId == StructureDefinition.binaryEncodingId,
            case .binary(let body) = e.body
        else { throw Unexpected(description: "\(id): \(value)") }
        var r = BinaryReader(body)
        return try StructureDefinition(from: &r)
    }

    struct Unexpected: Error, CustomStringConvertible { let description: String }

    /// The namespace table: 0, the server's own at 1 (OPC 10000-5 §8.3.2: index 1 is the local server's), DI at 2,
    /// AutoID at 3.
    @Test func theNamespaceTableHasTheServerAtOneAndDIAtTwo() {
        #expect(
            space.namespaces == [
                "http://opcfoundation.org/UA/", "urn:vlogger:test", "http://opcfoundation.org/UA/DI/",
                "http://opcfoundation.org/UA/AutoID/",
            ])
        // DI's DeviceSet (ns=1;i=5001 in DI's NodeSet) is organized by Objects (i=85).
        let deviceSet = space.node(NodeId(5001, namespace: 2))
        #expect(deviceSet?.browseName == QualifiedName(namespace: 2, "DeviceSet"))
        #expect(
            deviceSet?.references.contains(Reference(ReferenceTypeIds.organizes, NodeId(85), forward: false)) == true)
        #expect(
            space.node(NodeId(85))?.references.contains(
                Reference(ReferenceTypeIds.organizes, NodeId(5001, namespace: 2))) == true)
        // DeviceType (ns=1;i=1002) is a subtype of ComponentType (ns=1;i=15063), OPC 10000-100 §5.5.2.
        #expect(space.isSubtype(NodeId(1002, namespace: 2), of: NodeId(15063, namespace: 2)))
    }

    /// TranslateBrowsePaths (OPC 10000-4 §7.26): the final element may have an empty target name, and then every
    /// target of its references is one; an empty name before the last is Bad_BrowseNameInvalid.
    @Test func aPathsLastElementMayNameNoTarget() {
        func path(_ names: [QualifiedName]) -> BrowsePath {
            BrowsePath(
                startingNode: NodeId(84),
                relativePath: RelativePath(
                    elements: names.map {
                        RelativePathElement(
                            referenceTypeId: ReferenceTypeIds.hierarchicalReferences, includeSubtypes: true,
                            targetName: $0)
                    }))
        }
        let all = space.translate(path([QualifiedName("Objects"), QualifiedName(nil)]))
        #expect(all.statusCode == .good)
        let targets = Set((all.targets ?? []).map(\.targetId.nodeId))
        // Objects (i=85) organizes Server (i=2253) and DI's DeviceSet, among others.
        #expect(targets.contains(NodeId(2253)) && targets.contains(NodeId(5001, namespace: 2)), "\(targets)")
        let middle = space.translate(path([QualifiedName(nil), QualifiedName("Server")]))
        #expect(middle.statusCode == .badBrowseNameInvalid)
    }

    /// UserNameIdentityToken (i=322): the NodeSet's <Definition> has UserName, Password, EncryptionAlgorithm; its
    /// supertype UserIdentityToken (i=316) has PolicyId. OPC 10000-3 §8.48: the supertype's fields come first.
    @Test func aDerivedStructureListsItsSupertypesFieldsFirst() throws {
        let d = try structure(NodeId(322))
        #expect(d.fields?.map(\.name) == ["PolicyId", "UserName", "Password", "EncryptionAlgorithm"])
        #expect(d.baseDataType == NodeId(316))
        #expect(d.defaultEncodingId == NodeId(324))  // UserNameIdentityToken_Encoding_DefaultBinary, NodeIds.csv
        #expect(d.structureType == .structure)
    }

    /// AutoID's RfidScanResult (ns=1;i=3007 in its NodeSet, a subtype of the abstract ScanResult, i=3001): its
    /// NodeSet <Definition> has Sighting only; served, it has ScanResult's CodeType, ScanData, Timestamp and
    /// optional Location first, and is a structure with optional fields (StructureType 1) through the inherited
    /// Location (OPC 10000-3 §8.48; OPC 30010 §9.3.8–9.3.9). The abstract ScanResult has no DefaultEncodingId.
    @Test func autoIdsRfidScanResultHasItsSupertypesFieldsFirst() throws {
        let d = try structure(NodeId(3007, namespace: 3))
        #expect(d.fields?.map(\.name) == ["CodeType", "ScanData", "Timestamp", "Location", "Sighting"])
        #expect(d.fields?.map(\.isOptional) == [false, false, false, true, false])
        #expect(d.structureType == .structureWithOptionalFields)
        #expect(d.baseDataType == NodeId(3001, namespace: 3))
        #expect(d.defaultEncodingId == NodeId(5011, namespace: 3))  // RfidScanResult's Default Binary
        #expect(try structure(NodeId(3001, namespace: 3)).defaultEncodingId == .null)
        // RfidReaderDeviceType (i=1003) is an AutoIdDeviceType (i=1001), a DI DeviceType (DI i=1002).
        #expect(space.isSubtype(NodeId(1003, namespace: 3), of: NodeId(1002, namespace: 2)))
    }

    /// Across every generated structure: a subtype's definition begins with its supertype's fields, in order.
    @Test func everyStructuresDefinitionBeginsWithItsSupertypes() throws {
        var checked = 0
        for id in space.allIds {
            guard let node = space.node(id), node.nodeClass == .dataType, node.dataTypeDefinition != nil,
                let d = try? structure(id), d.baseDataType != NodeId(22)
            else { continue }
            let base = try structure(d.baseDataType)
            let prefix = Array((d.fields ?? []).prefix(base.fields?.count ?? 0))
            #expect(prefix == (base.fields ?? []), "\(id)")
            checked += 1
        }
        #expect(checked >= 8)
    }

    /// DI's DeviceHealthEnumeration (ns=1;i=6244): NORMAL 0 … MAINTENANCE_REQUIRED 4 (OPC 10000-100 §5.5.4).
    @Test func anEnumerationHasItsEnumDefinition() throws {
        let value = space.read(NodeId(6244, namespace: 2), AttributeId.dataTypeDefinition.rawValue, now: now)
        guard case .scalar(.extensionObject(let e))? = value.value, e.typeId == EnumDefinition.binaryEncodingId,
            case .binary(let body) = e.body
        else { throw Unexpected(description: "\(value)") }
        var r = BinaryReader(body)
        let d = try EnumDefinition(from: &r)
        #expect(d.fields?.map(\.name) == ["NORMAL", "FAILURE", "CHECK_FUNCTION", "OFF_SPEC", "MAINTENANCE_REQUIRED"])
        #expect(d.fields?.map(\.value) == [0, 1, 2, 3, 4])
        // A built-in type has no definition: Bad_AttributeIdInvalid (OPC 10000-4 §5.10.2).
        let builtIn = space.read(NodeId(12), AttributeId.dataTypeDefinition.rawValue, now: now)
        #expect(builtIn.status == .badAttributeIdInvalid)
    }
}

/// The server's rate of password checks (its own design: 210,000 PBKDF2 rounds a check, on an event loop).
struct PasswordThrottleTests {
    @Test func tenAtOnceThenFiveASecond() {
        let t = PasswordThrottle(perSecond: 5, burst: 10)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        #expect((0..<10).allSatisfy { _ in t.take(now: start) })
        #expect(!t.take(now: start))
        // 0.2 s later one more (5 a second), not two.
        #expect(t.take(now: start.addingTimeInterval(0.2)))
        #expect(!t.take(now: start.addingTimeInterval(0.2)))
        // A quiet minute refills the bucket to 10, not to 300.
        let later = start.addingTimeInterval(60)
        #expect((0..<10).allSatisfy { _ in t.take(now: later) })
        #expect(!t.take(now: later))
        #expect(t.refused == 3)
        // A clock that steps back takes nothing and gives nothing.
        #expect(!t.take(now: start))
    }
}

/// Browse and BrowseNext over a session (OPC 10000-4 §5.8.2–5.8.3).
@Suite(.serialized)
struct BrowseTests {
    /// BrowseNext gives pages of the size the Browse asked for (requestedMaxReferencesPerNode), not the server's
    /// own limit, until the last page, which has no continuation point.
    @Test func browseNextKeepsThePageSizeTheBrowseAskedFor() async throws {
        let s = try await TestServer()
        defer { Task { await s.stop() } }
        let c = try RawClient.withSession(port: s.port)
        // BaseDataType's subtypes (HasSubtype, forward): Boolean, String, DateTime … ten in this address space.
        let all = s.server.core.addressSpace.browse(
            BrowseDescription(nodeId: NodeId(24), referenceTypeId: ReferenceTypeIds.hasSubtype, resultMask: 63)
        ).references
        #expect(all.count >= 7)
        var (type, r) = try c.call(
            BrowseRequest(
                requestHeader: c.header(), requestedMaxReferencesPerNode: 3,
                nodesToBrowse: [
                    BrowseDescription(nodeId: NodeId(24), referenceTypeId: ReferenceTypeIds.hasSubtype, resultMask: 63)
                ]))
        #expect(type == BrowseResponse.binaryEncodingId)
        var result = try #require(try BrowseResponse(from: &r).results?.first)
        var pages = [result.references?.count ?? 0]
        var seen = result.references ?? []
        while let point = result.continuationPoint, !point.isEmpty {
            (type, r) = try c.call(BrowseNextRequest(requestHeader: c.header(), continuationPoints: [point]))
            #expect(type == BrowseNextResponse.binaryEncodingId)
            result = try #require(try BrowseNextResponse(from: &r).results?.first)
            pages.append(result.references?.count ?? 0)
            seen += result.references ?? []
        }
        let full = all.count / 3
        #expect(pages == Array(repeating: 3, count: full) + (all.count % 3 == 0 ? [] : [all.count % 3]), "\(pages)")
        #expect(seen.map(\.nodeId) == all.map(\.nodeId))
    }
}

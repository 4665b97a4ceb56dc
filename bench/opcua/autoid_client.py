#!/usr/bin/env python3
"""The AutoID benchmark's OPC UA client (asyncua, PyPI): driven by bench/opcua/autoid-latency.sh.

    autoid_client.py URL READER SECONDS STATIC_UID EVENTS_OUT CALLS_OUT

Subscribes to the reader's device (DeviceSet/READER) for RfidScanEventType events for SECONDS, writing one line per
event to EVENTS_OUT: the time it arrived here (seconds since 1970, this machine's clock, the gateway's too), the UID
and the event's own Time. Then calls ReadBlocks(STATIC_UID, 12, 2) (8 bytes of a SLIX2) 200 times, 20 ms apart,
writing each round trip (ms, from the call's sending to its answer, client included) to CALLS_OUT.
"""
import asyncio
import sys
import time

from asyncua import Client, ua


async def main(url, reader, seconds, static_uid, events_out, calls_out):
    client = Client(url, timeout=10)
    client.application_uri = "urn:vlogger:bench:autoid"
    await client.connect()
    try:
        di = await client.get_namespace_index("http://opcfoundation.org/UA/DI/")
        autoid = await client.get_namespace_index("http://opcfoundation.org/UA/AutoID/")
        device = None
        for child in await client.get_node(ua.NodeId(5001, di)).get_children():
            if (await child.read_browse_name()).Name == reader:
                device = child
        events = open(events_out, "w", buffering=1)

        class Handler:
            def event_notification(self, event):
                now = time.time()
                uid = event.ScanResult[0].ScanData.Value.hex().upper() if event.ScanResult else "?"
                events.write("%.4f %s %.4f\n" % (now, uid, event.Time.timestamp()))

        await client.load_data_type_definitions()
        sub = await client.create_subscription(20, Handler())
        await sub.subscribe_events(device, client.get_node(ua.NodeId(1006, autoid)))
        await asyncio.sleep(seconds)
        await sub.delete()
        read_blocks = await device.get_child(["%d:ReadBlocks" % device.nodeid.NamespaceIndex])
        uid = bytes.fromhex(static_uid)
        with open(calls_out, "w") as out:
            for _ in range(200):
                t0 = time.perf_counter()
                data, status = await device.call_method(
                    read_blocks, uid, ua.Variant(12, ua.VariantType.UInt16), ua.Variant(2, ua.VariantType.UInt16))
                out.write("%.3f %d %d\n" % ((time.perf_counter() - t0) * 1000, status, len(data)))
                await asyncio.sleep(0.02)
    finally:
        await client.disconnect()


if __name__ == "__main__":
    a = sys.argv
    asyncio.run(main(a[1], a[2], float(a[3]), a[4], a[5], a[6]))

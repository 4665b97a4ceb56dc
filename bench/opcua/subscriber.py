#!/usr/bin/env python3
"""The OPC UA benchmark's subscriber (bench/opcua/bench.sh): asyncua 2.1.0, SESSIONS sessions, each monitoring
every node the benchmark printed (sampling 100 ms, publishing interval 50 ms). Each value is the time it was
taken (ms since 1970, same machine): the latency is the receive time minus the value. Prints p50/p99."""
import asyncio
import sys
import time

from asyncua import Client, ua


async def session(url, nodes, seconds, latencies):
    client = Client(url, timeout=10)
    await client.connect()

    class Handler:
        def datachange_notification(self, node, val, data):
            if isinstance(val, float) and measuring[0]:
                latencies.append(time.time() * 1000 - val)

    sub = await client.create_subscription(ua.CreateSubscriptionParameters(
        RequestedPublishingInterval=50, RequestedMaxKeepAliveCount=20, RequestedLifetimeCount=200), Handler())
    await sub.subscribe_data_change([client.get_node(n) for n in nodes], sampling_interval=100)
    await asyncio.sleep(seconds)
    await sub.delete()
    await client.disconnect()


measuring = [False]


async def main():
    url, nodes, sessions, seconds = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), float(sys.argv[4])
    latencies = []

    async def start_measuring():
        await asyncio.sleep(3)
        measuring[0] = True

    await asyncio.gather(start_measuring(), *(session(url, nodes, seconds, latencies) for _ in range(sessions)))
    latencies.sort()
    n = len(latencies)
    p = lambda q: latencies[min(n - 1, int(n * q))]
    print("asyncua subscriber: %d sessions x %d items, %d notifications; field change -> notification p50 %.1f ms, p99 %.1f ms"
          % (sessions, len(nodes), n, p(0.5), p(0.99)))


asyncio.run(main())

#!/usr/bin/env python3
"""Checks vlogger's Home Assistant MQTT discovery by Home Assistant's own rules, as read from its MQTT integration
(Home Assistant Core 2026.2.3; docs/reference/home-assistant-mqtt-discovery.md gives each rule with file and line),
and replays what HA would do with the messages that followed, rendering the templates with Jinja2 (the template
engine HA uses). Input: the JSON lines of two mqtt_subscriber.py runs subscribed to `#` ({"topic", "retain",
"payload"}): LIVE, subscribed while the gateway ran, and RETAINED, subscribed after it, which gets what the broker
retained (a broker delivers live messages with the retain flag clear: MQTT 3.1.1 §3.3.1.3), as a Home Assistant
started later would.

Usage: ha_discovery_check.py LIVE.jsonl RETAINED.jsonl
Rules checked on every message under homeassistant/:
- the topic, minus `homeassistant/`, matches HA's TOPIC_MATCHER (discovery.py) and is of a component HA subscribes
  to; the payload is a JSON object; discovery is retained;
- tag: `topic` required and a valid subscribe topic, `value_template` optional, `device` with at least one
  identifier (schemas.py; vlogger always sends it); no other keys (HA would drop them);
- sensor: `state_topic` required; its `json_attributes_template`, if any, renders a JSON object from the state; `unique_id` present and unique; `device_class` one of HA's and
  `unit_of_measurement` one its device class allows (sensor.py validate_sensor_state_and_device_class_config);
  `state_class` one of HA's; not both availability_topic and availability; `device` with an identifier.
Then the replay: each message on a tag scanner's topic fires one scan when the scanner's template renders to a
non-empty text (tag.py), with no de-duplication; the scans must be exactly one per arrival event published (and each
arrival's UID). Each sensor's template must render a number from the retained state on its state topic, and the
availability topic must say `online` (its default payload_available).
Prints a summary and exits 0, or each finding and exits 1.
"""
import json
import re
import sys

import jinja2

TOPIC_MATCHER = re.compile(
    r"(?P<component>\w+)/(?:(?P<node_id>[a-zA-Z0-9_-]+)/)?(?P<object_id>[a-zA-Z0-9_-]+)/config")
COMPONENTS = {"tag", "sensor", "binary_sensor", "event", "device_automation", "device"}
DEVICE_CLASS_UNITS = {  # sensor/const.py, the classes vlogger may use
    "temperature": {"°C", "°F", "K"},
    "humidity": {"%"},
    "battery": {"%"},
    "voltage": {"μV", "mV", "V", "kV", "MV"},
}
STATE_CLASSES = {"measurement", "measurement_angle", "total", "total_increasing"}
TAG_KEYS = {"topic", "value_template", "device", "qos", "encoding", "platform"}

env = jinja2.Environment()
env.filters["tojson"] = lambda v: json.dumps(v)


def matches(filter_, topic):
    f, t = filter_.split("/"), topic.split("/")
    for i, part in enumerate(f):
        if part == "#":
            return True
        if i >= len(t) or (part != "+" and part != t[i]):
            return False
    return len(f) == len(t)


def render(template, payload):
    try:
        value_json = json.loads(payload)
    except ValueError:
        value_json = None
    return env.from_string(template).render(value=payload, value_json=value_json).strip()


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main(live_path, retained_path):
    messages, kept = load(live_path), load(retained_path)
    findings = []
    scanners, sensors, unique_ids = {}, {}, set()
    for m in kept:
        topic = m["topic"]
        if not topic.startswith("homeassistant/"):
            continue
        where = topic
        match = TOPIC_MATCHER.match(topic[len("homeassistant/"):])
        if not match or match.group(0) != topic[len("homeassistant/"):]:
            findings.append(f"{where}: HA would drop it as an illegal discovery topic")
            continue
        if match["component"] not in COMPONENTS:
            findings.append(f"{where}: not a component HA subscribes to")
        if not m.get("retain"):
            findings.append(f"{where}: not retained (a restarted HA would not see it)")
        try:
            config = json.loads(m["payload"])
        except ValueError:
            findings.append(f"{where}: not JSON")
            continue
        if not isinstance(config, dict):
            findings.append(f"{where}: not a JSON object")
            continue
        device = config.get("device")
        if not isinstance(device, dict) or not (device.get("identifiers") or device.get("connections")):
            findings.append(f"{where}: a device without identifiers (HA refuses it)")
        if match["component"] == "tag":
            extra = set(config) - TAG_KEYS
            if extra:
                findings.append(f"{where}: keys HA removes from a tag: {sorted(extra)}")
            t = config.get("topic")
            if not isinstance(t, str) or not t or "#" in t[:-1] or any(
                    "+" in level and level != "+" for level in t.split("/")):
                findings.append(f"{where}: topic {t!r} is not a valid subscribe topic")
                continue
            scanners[topic] = config
        elif match["component"] == "sensor":
            if not config.get("state_topic"):
                findings.append(f"{where}: no state_topic")
            uid = config.get("unique_id")
            if not uid:
                findings.append(f"{where}: no unique_id (HA would ignore its device)")
            elif uid in unique_ids:
                findings.append(f"{where}: unique_id {uid} twice")
            unique_ids.add(uid)
            dc, unit = config.get("device_class"), config.get("unit_of_measurement")
            if dc is not None and (dc not in DEVICE_CLASS_UNITS or unit not in DEVICE_CLASS_UNITS[dc]):
                findings.append(f"{where}: unit {unit!r} is not one HA allows for device_class {dc!r}")
            if config.get("state_class") not in (None, *STATE_CLASSES):
                findings.append(f"{where}: state_class {config.get('state_class')!r}")
            if "availability_topic" in config and "availability" in config:
                findings.append(f"{where}: availability_topic and availability together (HA refuses it)")
            sensors[topic] = config
    # The replay.
    arrivals, scans = [], []
    retained = {m["topic"]: m["payload"] for m in kept if m.get("retain")}
    for m in messages:
        topic, payload = m["topic"], m["payload"]
        if topic.startswith("homeassistant/"):
            continue
        try:
            row = json.loads(payload)
        except ValueError:
            row = None
        if isinstance(row, dict) and row.get("table") == "events" and row.get("kind") == "arrival":
            arrivals.append(row.get("uid"))
        for config in scanners.values():
            if matches(config["topic"], topic):
                tag_id = render(config.get("value_template", "{{ value }}"), payload)
                if tag_id:
                    scans.append(tag_id)
    if sorted(scans) != sorted(arrivals):
        findings.append(f"{len(scans)} scans for {len(arrivals)} arrivals (first scans {scans[:5]}, arrivals "
                        f"{arrivals[:5]})")
    for topic, config in sensors.items():
        state = retained.get(config.get("state_topic"))
        if state is None:
            findings.append(f"{topic}: no retained state on {config.get('state_topic')}")
            continue
        value = render(config["value_template"], state)
        try:
            float(value)
        except ValueError:
            findings.append(f"{topic}: the state renders {value!r}, not a number")
        # The attributes: HA renders the template on each message of json_attributes_topic and wants an object.
        if config.get("json_attributes_template"):
            try:
                attributes = json.loads(render(config["json_attributes_template"], state))
                if not isinstance(attributes, dict):
                    findings.append(f"{topic}: the attributes template renders {attributes!r}, not an object")
            except Exception as e:  # an undefined member that tojson cannot write, or text that is not JSON
                findings.append(f"{topic}: the attributes template fails on {state[:120]}: {e}")
        if retained.get(config.get("availability_topic")) not in ("online", "offline"):
            findings.append(f"{topic}: availability topic says {retained.get(config.get('availability_topic'))!r}")
    for f_ in findings[:20]:
        print(f_)
    if findings:
        print(f"{len(findings)} findings")
        return 1
    if not scanners or not sensors or not arrivals:
        print(f"nothing to check: {len(scanners)} scanners, {len(sensors)} sensors, {len(arrivals)} arrivals")
        return 1
    print(f"ok: {len(scanners)} tag scanners, {len(sensors)} sensors, every discovery topic and payload by HA's "
          f"rules; {len(scans)} scans for {len(arrivals)} arrivals (one each); every sensor's state a number")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))

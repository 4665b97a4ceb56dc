/// The `# HELP` text of every metric family `/metrics` exports (Prometheus text format 0.0.4: "HELP lines may
/// contain any sequence of UTF-8 characters (after the metric name), but the backslash and the line feed
/// characters have to be escaped as `\\` and `\n`"). swift-metrics has no place for a help text, so the exposition
/// gets them here, one line before each family's `# TYPE` line; `promtool check metrics` in CI and
/// `MetricHelpTests` fail on a family without one.
enum MetricHelp {
    static let families: [String: String] = [
        "vlogger_start_time_seconds": "When this gateway process started, in seconds since 1970 (UTC).",
        "vlogger_gateway_info": "This gateway: its [gateway] id and site as labels; always 1. Dashboards join on it.",
        "vlogger_cycles_total": "Poll cycles a reader's job has run (inventory, plan reads, rules).",
        "vlogger_tags_seen_total": "Tags that arrived in a reader's field.",
        "vlogger_tag_departures_total": "Tags that left a reader's field.",
        "vlogger_tags_in_field": "Tags in a reader's field now.",
        "vlogger_readings_total": "Readings a reader's job has taken (handed to the store writer).",
        "vlogger_exchanges_total": "Request/response exchanges with tags (each command a tag answered or not).",
        "vlogger_errors_total": "Failed exchanges and reader errors, by kind.",
        "vlogger_rule_violations_total": "Rule violations raised by a reader's job.",
        "vlogger_reader_up": "1 while the reader answers, 0 while it does not (its job keeps trying).",
        "vlogger_last_successful_poll_timestamp_seconds":
            "When the reader last completed a poll cycle, in seconds since 1970; now minus this is the poll age.",
        "vlogger_cycle_air_time_seconds": "Time on the air of one poll cycle (computed from ISO/IEC 15693 timings).",
        "vlogger_field_value":
            "A tag's latest numeric decoded field while the tag is in the reader's field, in the field's unit.",
        "vlogger_rule_violation": "1 while a rule is violated by a tag; the series goes when the violation ends.",
        "vlogger_rule_limit": "The limit of a range rule on a decoded field (bound min or max), in the field's unit.",
        "vlogger_readings_committed_total": "Readings committed to the store.",
        "vlogger_readings_dropped_total": "Readings dropped because the store writer's queue was full.",
        "vlogger_events_dropped_total": "Events dropped because the store writer's queue was full.",
        "vlogger_store_failed_commits_total": "Store commits that failed (the batch is kept and tried again).",
        "vlogger_store_up": "1 while the store commits, 0 while it fails.",
        "vlogger_queue_depth": "Readings and events waiting for the store writer.",
        "vlogger_batch_commit_seconds": "Time to commit one batch to the store.",
        "vlogger_config_reloads_total": "Configuration reloads (SIGHUP), by result.",
        "vlogger_stream_clients": "Clients of the live stream (/api/v1/stream) now.",
        "vlogger_stream_clients_dropped_total": "Stream clients dropped for not taking what was sent in time.",
        "vlogger_output_connected": "1 while an output's connection is up (MQTT), 0 while it is not.",
        "vlogger_output_refused_rows_total": "Rows an output's destination refused for good (named in an event).",
        "vlogger_output_last_success_timestamp_seconds":
            "When an output last delivered a round, in seconds since 1970.",
        "vlogger_output_up": "1 while an output delivers, 0 while its rounds fail.",
        "vlogger_output_backlog_rows": "Rows of a table the output has not delivered yet.",
        "vlogger_output_oldest_unsent_age_seconds": "Age of the oldest row of a table the output has not delivered.",
        "vlogger_output_rows_sent_total": "Rows of a table the output delivered.",
        "vlogger_output_failures_total": "An output's failed rounds, by kind of failure.",
        "vlogger_sync_up": "The fleet sync's vlogger_output_up (its older name, kept).",
        "vlogger_sync_backlog_rows": "The fleet sync's vlogger_output_backlog_rows (its older name, kept).",
        "vlogger_sync_oldest_unsynced_age_seconds":
            "The fleet sync's vlogger_output_oldest_unsent_age_seconds (its older name, kept).",
        "vlogger_sync_rows_sent_total": "The fleet sync's vlogger_output_rows_sent_total (its older name, kept).",
        "vlogger_sync_failures_total": "The fleet sync's vlogger_output_failures_total (its older name, kept).",
    ]

    /// `exposition` with a `# HELP` line before each `# TYPE` line of a family in `families` (and none added where
    /// the registry wrote one already).
    /// `extra`: the HELP texts of families named at run time (a server's counts).
    static func annotate(_ exposition: [UInt8], extra: [String: String] = [:]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(exposition.count + families.count * 80)
        let type = Array("# TYPE ".utf8), help = Array("# HELP ".utf8)
        var start = 0
        var lastHelp: ArraySlice<UInt8> = []
        while start < exposition.count {
            let end = exposition[start...].firstIndex(of: 0x0A) ?? exposition.count
            let line = exposition[start..<end]
            if line.starts(with: help) {
                lastHelp = name(line.dropFirst(help.count))
            } else if line.starts(with: type) {
                let family = name(line.dropFirst(type.count))
                let key = String(decoding: family, as: UTF8.self)
                if family != lastHelp, let text = families[key] ?? extra[key] {
                    out.append(contentsOf: help)
                    out.append(contentsOf: family)
                    out.append(0x20)
                    for b in text.utf8 {
                        if b == 0x5C {
                            out.append(contentsOf: [0x5C, 0x5C])
                        } else if b == 0x0A {
                            out.append(contentsOf: [0x5C, 0x6E])
                        } else {
                            out.append(b)
                        }
                    }
                    out.append(0x0A)
                }
            }
            out.append(contentsOf: line)
            if end < exposition.count { out.append(0x0A) }
            start = end + 1
        }
        return out
    }

    static func name(_ rest: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        rest.prefix { $0 != 0x20 }
    }
}

// The local store's schema as history: each migration once, in order, by name (GRDB's migrator applies the
// missing ones; `Store.migrate`). The shape they end at is the tables' descriptions (`TableDescription`), which
// the tests hold them to.

extension Store {
    /// The migrations, in order. A name once shipped never changes; new schema goes in a new entry.
    static let migrations: [(name: String, sql: String)] = [
        (
            "001-tags-readings-events-writes",
            """
            CREATE TABLE tags(
                uid TEXT PRIMARY KEY NOT NULL,          -- printed form, E0 first
                first_seen INTEGER NOT NULL,            -- ms since 1970 UTC
                last_seen INTEGER NOT NULL,
                manufacturer TEXT NOT NULL,
                model TEXT,
                block_count INTEGER,
                block_size INTEGER,
                memory_source TEXT
            ) WITHOUT ROWID;
            CREATE TABLE readings(
                id INTEGER PRIMARY KEY,
                time INTEGER NOT NULL,
                gateway TEXT NOT NULL,
                uid TEXT NOT NULL,
                block INTEGER NOT NULL,                 -- first block of the read
                count INTEGER NOT NULL,
                data BLOB NOT NULL,
                security BLOB,                          -- one status byte per block, when read
                decoded TEXT                            -- JSON object of the plan's decoded fields
            );
            CREATE TABLE events(
                id INTEGER PRIMARY KEY,
                time INTEGER NOT NULL,
                gateway TEXT NOT NULL,
                uid TEXT,
                kind TEXT NOT NULL,
                name TEXT NOT NULL,
                severity TEXT NOT NULL,
                detail TEXT NOT NULL
            );
            CREATE TABLE writes(
                id INTEGER PRIMARY KEY,
                time INTEGER NOT NULL,
                gateway TEXT NOT NULL,
                uid TEXT NOT NULL,
                block INTEGER NOT NULL,
                data BLOB NOT NULL,
                flags INTEGER,
                result TEXT NOT NULL,
                verified INTEGER NOT NULL,
                exchanges INTEGER NOT NULL
            );
            """
        ),
        (
            "002-time-indexes-and-fields",
            """
            CREATE INDEX readings_by_time ON readings(time);
            CREATE INDEX events_by_time ON events(time);
            CREATE INDEX writes_by_time ON writes(time);
            CREATE TABLE fields(
                name TEXT PRIMARY KEY NOT NULL,
                unit TEXT,
                position INTEGER NOT NULL
            ) WITHOUT ROWID;
            """
        ),
        (
            "003-reader-and-location",
            """
            ALTER TABLE readings ADD COLUMN reader TEXT;
            ALTER TABLE readings ADD COLUMN location TEXT;
            ALTER TABLE events ADD COLUMN reader TEXT;
            ALTER TABLE events ADD COLUMN location TEXT;
            ALTER TABLE tags ADD COLUMN last_reader TEXT;
            ALTER TABLE tags ADD COLUMN last_location TEXT;
            """
        ),
        // The status page's latest readings per tag and `export --uid` go through this index.
        (
            "004-readings-by-uid",
            """
            CREATE INDEX readings_by_uid ON readings(uid, id);
            CREATE INDEX tags_by_last_seen ON tags(last_seen);
            """
        ),
        // The asset register, imported from CSV (`vlogger assets import`, or `[rules] register` at start and reload).
        (
            "005-assets",
            """
            CREATE TABLE assets(
                uid TEXT PRIMARY KEY NOT NULL,          -- printed form, E0 first
                asset_id TEXT NOT NULL,
                name TEXT,
                location TEXT,
                extra TEXT,                             -- JSON object of the file's other columns (expected values)
                source TEXT NOT NULL,                   -- the file it was last imported from
                updated_at INTEGER NOT NULL             -- ms since 1970 UTC, when it last changed
            ) WITHOUT ROWID;
            CREATE INDEX assets_by_location ON assets(location);
            """
        ),
        // Audits: what a location's readers saw against the register, one result per asset or unexpected tag.
        (
            "006-audits",
            """
            CREATE TABLE audits(
                id INTEGER PRIMARY KEY,
                started INTEGER NOT NULL,
                finished INTEGER NOT NULL,
                gateway TEXT NOT NULL,
                location TEXT NOT NULL,
                readers TEXT NOT NULL,                  -- the reader ids that took part, comma-separated
                rounds INTEGER NOT NULL,
                trigger TEXT NOT NULL,                  -- manual, schedule
                present INTEGER NOT NULL,
                missing INTEGER NOT NULL,
                wrong_location INTEGER NOT NULL,
                unexpected INTEGER NOT NULL,
                failed_checks INTEGER NOT NULL
            );
            CREATE INDEX audits_by_location ON audits(location, started);
            CREATE TABLE audit_results(
                id INTEGER PRIMARY KEY,
                audit INTEGER NOT NULL REFERENCES audits(id),
                uid TEXT NOT NULL,
                asset_id TEXT,
                status TEXT NOT NULL,                   -- present, missing, wrong-location, unexpected
                registered_location TEXT,
                seen_location TEXT,
                seen_by TEXT,
                seen_rounds INTEGER NOT NULL,
                first_seen INTEGER,
                last_seen INTEGER,
                failed_checks TEXT                      -- JSON array of what did not match on a present asset
            );
            CREATE INDEX audit_results_by_audit ON audit_results(audit);
            """
        ),
        // Writes waiting for their tag (vlogger write --when-seen), and what became of them.
        (
            "007-write-queue",
            """
            CREATE TABLE write_queue(
                id INTEGER PRIMARY KEY,
                created INTEGER NOT NULL,
                uid TEXT NOT NULL,
                block INTEGER NOT NULL,                 -- first block
                data BLOB NOT NULL,                     -- whole blocks
                flags INTEGER,                          -- request flags asked for (Option, data rate), or NULL
                reader TEXT,                            -- only this reader, or NULL for any
                expires INTEGER,                        -- ms since 1970 UTC, or NULL
                state TEXT NOT NULL,                    -- queued, done, failed, expired, cancelled
                result TEXT,
                finished INTEGER
            );
            CREATE INDEX write_queue_by_state ON write_queue(state, uid);
            """
        ),
        // Queued locks: write, write then lock the blocks written, or lock one block (data empty).
        (
            "008-write-queue-operation",
            """
            ALTER TABLE write_queue ADD COLUMN operation TEXT NOT NULL DEFAULT 'write';
            """
        ),
        // Fleet sync: the local store is the outbox; this is how far the central server has acknowledged each
        // table (the highest local row id of a batch the server committed).
        (
            "009-sync-cursor",
            """
            CREATE TABLE sync_cursor(
                tbl TEXT PRIMARY KEY NOT NULL,          -- readings, events
                last_id INTEGER NOT NULL,
                updated_at INTEGER NOT NULL
            ) WITHOUT ROWID;
            """
        ),
        // Tags change as they are seen again: each insert or update takes the next change number, so fleet sync
        // ships the tags changed after its cursor in commit order (last_seen is not: a reader's batch may
        // commit after another's with later times). Existing tags are numbered by last_seen.
        (
            "010-tags-change-seq",
            """
            ALTER TABLE tags ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
            UPDATE tags SET seq = o.n FROM (SELECT uid, row_number() OVER (ORDER BY last_seen, uid) AS n FROM tags) AS o WHERE o.uid = tags.uid;
            CREATE INDEX tags_by_seq ON tags(seq);
            """
        ),
        // A reader's own buffer (FEIG buffered read mode) drained into the store: the records a commit took from
        // it and the reader has not been told to delete yet. Written in the same transaction as their readings,
        // removed once the reader cleared them; one left after a crash tells the next drain that those records,
        // read again, are already stored.
        (
            "011-reader-buffers",
            """
            CREATE TABLE reader_buffers(
                reader TEXT PRIMARY KEY NOT NULL,
                records INTEGER NOT NULL,               -- how many records the commit took from the buffer's head
                raw BLOB NOT NULL,                      -- those records' bytes, as the reader sent them
                time INTEGER NOT NULL
            ) WITHOUT ROWID;
            """
        ),
        // A client's Idempotency-Key on POST /api/writes: the same key queues the write once.
        (
            "012-write-queue-idempotency-key",
            """
            ALTER TABLE write_queue ADD COLUMN idempotency_key TEXT;
            CREATE UNIQUE INDEX write_queue_by_idempotency_key ON write_queue(idempotency_key) WHERE idempotency_key IS NOT NULL;
            """
        ),
        // The outbox has consumers (the fleet sync to PostgreSQL is the first): each has its own cursor per table,
        // and retention keeps a row until every enabled consumer has it. The fleet sync's cursors become those of
        // the consumer named "postgres".
        (
            "013-outbox-cursor-per-consumer",
            """
            CREATE TABLE outbox_cursor(
                consumer TEXT NOT NULL,                 -- the consumer's name: postgres, …
                tbl TEXT NOT NULL,                      -- readings, events, writes, audits, audit_results, tags
                last_id INTEGER NOT NULL,               -- the highest local id (tags: change number) it acknowledged
                updated_at INTEGER NOT NULL,
                PRIMARY KEY (consumer, tbl)
            ) WITHOUT ROWID;
            INSERT INTO outbox_cursor(consumer, tbl, last_id, updated_at)
                SELECT 'postgres', tbl, last_id, updated_at FROM sync_cursor;
            DROP TABLE sync_cursor;
            """
        ),
        // A reading and an event carry the register's asset id of their tag when they were stored (NULL for a tag
        // the register does not list). Earlier rows keep NULL.
        (
            "014-asset-id-on-readings-and-events",
            """
            ALTER TABLE readings ADD COLUMN asset_id TEXT;
            ALTER TABLE events ADD COLUMN asset_id TEXT;
            """
        ),
        // Event kinds as a closed set (docs/json.md): a queued write's outcome was an event of kind `start` (done)
        // or `error` named `queued-write-<state>`; it is `write_done`, `write_failed` or `write_expired` named by
        // the write's id (from the detail, `queued write <id> (…`). A name that repeated its kind is empty.
        (
            "015-event-kinds",
            """
            UPDATE events SET
                kind = 'write_' || substr(name, 14),
                name = CASE WHEN detail LIKE 'queued write % (%'
                    THEN substr(detail, 14, instr(substr(detail, 14), ' ') - 1) ELSE '' END
            WHERE name IN ('queued-write-done', 'queued-write-failed', 'queued-write-expired');
            UPDATE events SET name = '' WHERE kind IN ('start', 'stop', 'arrival', 'departure') AND name = kind;
            """
        ),
        // A tag's originality verdict, once its signature was checked (docs/reference/originality-signatures.md).
        // Kept locally: not exported, not sent to outputs or the central database.
        ("016-tag-originality", "ALTER TABLE tags ADD COLUMN originality TEXT;"),
        // "A tag's readings since …" in id order (the read API's pages, the stream): the time in the index, so the
        // rows outside the window are skipped, and the page's ids found, without reading the rows (docs/api.md,
        // "Latency"). Replaces readings_by_uid(uid, id), which it serves too. On a large store the first start
        // after the upgrade builds it (the service answered 1.8 s after its start on a store of 2,000,000 readings).
        (
            "017-readings-by-uid-with-time",
            """
            CREATE INDEX readings_by_uid_time ON readings(uid, id, time);
            DROP INDEX readings_by_uid;
            """
        ),
        // How far the gateway has read each sensor tag's log, by logging session (the kind's key: an FM13's start
        // time and interval). Committed with the readings made of the records, so a record is stored once however
        // often the tag comes and goes; a new session (logging restarted) starts at 0.
        (
            "018-sensor-sessions",
            """
            CREATE TABLE sensor_sessions(
                uid TEXT NOT NULL,
                session TEXT NOT NULL,
                kind TEXT NOT NULL,
                records INTEGER NOT NULL,             -- records of the session stored as readings
                updated_at INTEGER NOT NULL,
                PRIMARY KEY (uid, session)
            ) WITHOUT ROWID;
            """
        ),
        // The rule excursions of a sensor log still open at the last record read (JSON, the agent's own form),
        // committed with that record's reading: an excursion that spans two visits, or a restart, is reported once.
        (
            "019-sensor-excursions",
            """
            ALTER TABLE sensor_sessions ADD COLUMN excursions TEXT NOT NULL DEFAULT '{}';
            """
        ),
        // This store's identity: 16 random bytes made once, when the store is made (or migrated). Two gateways
        // configured with the same id have different stores, so the central store and the MQTT outputs tell them
        // apart (a restored copy of a store is the same instance, as it should be: its rows are the same rows).
        (
            "020-store-instance",
            """
            CREATE TABLE store_instance(
                one INTEGER PRIMARY KEY CHECK (one = 1),
                instance TEXT NOT NULL,
                created_at INTEGER NOT NULL
            );
            INSERT INTO store_instance VALUES (
                1, lower(hex(randomblob(16))), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER));
            """
        ),
        // What a decoded field's values are (FieldInfo.Kind: number, text, hex, json), where an export or an output
        // must know: CSV writes `hex` with the `\x` prefix so data tools read it as text. NULL (stored before the
        // column): a number.
        ("021-field-kind", "ALTER TABLE fields ADD COLUMN kind TEXT;"),
        // Who asked for a write or for what an event reports (`cli`, `api`, `queue`, `audit`, `opcua`, with the
        // client's name where there is one; docs/json.md). NULL: the agent by itself, or stored before the column.
        // A queued write keeps who queued it, for the write and the events it comes to.
        (
            "022-origin",
            """
            ALTER TABLE writes ADD COLUMN origin TEXT;
            ALTER TABLE events ADD COLUMN origin TEXT;
            ALTER TABLE write_queue ADD COLUMN origin TEXT;
            """
        ),
        // Where each consumer's cursor stood, sampled at most every five minutes as it moves: retention keeps rows a
        // consumer's destination acknowledged less than its safety window ago (the fleet sync's: a central cluster
        // that fails over can lose acknowledged commits, and the gateway sends them again). Seeded with each cursor
        // at the time it last moved.
        (
            "023-outbox-cursor-history",
            """
            CREATE TABLE outbox_cursor_history(
                consumer TEXT NOT NULL,
                tbl TEXT NOT NULL,
                at INTEGER NOT NULL,                    -- ms since 1970: the cursor was at last_id then
                last_id INTEGER NOT NULL,
                PRIMARY KEY (consumer, tbl, at)
            ) WITHOUT ROWID;
            INSERT INTO outbox_cursor_history(consumer, tbl, at, last_id)
                SELECT consumer, tbl, updated_at, last_id FROM outbox_cursor;
            """
        ),
    ]
}

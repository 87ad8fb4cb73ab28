/*
 * sqlite_ceiling: what SQLite alone does with exactly the SQL BuzzKit runs.
 *
 *   sqlite_ceiling seed  DB TENANT PEOPLE ANON BIG BIG_EVENTS
 *       Fills a migrated database: PEOPLE identified subscribers `user_%06d` (alias + one
 *       `$subscriber.merged` event each, like a real identify leaves them), ANON anonymous
 *       subscribers `anon_%021d` (the pool the identify benchmark renames), and BIG anonymous
 *       subscribers `anon_big%018d` with BIG_EVENTS events each (the absorb benchmark).
 *   sqlite_ceiling bench DB TENANT SECONDS PEOPLE ANON_FROM BIG SCENARIOS
 *       Runs the scenarios named in SCENARIOS (identify,events,get,copy) on DB (give it a copy: it writes) with synchronous=FULL, WAL,
 *       foreign_keys=ON and an 8 MiB in-memory sub-journal (the server's connection settings) and
 *       prints `name value unit` lines.
 *
 * The SQL text below is copied from Sources/Storage/SQLiteContext.swift; each request runs the
 * statements the server runs for it, in the same order, including the SAVEPOINT each writer job
 * gets and the snapshot reads that render the answer. Keep the two in step.
 *
 * Build: gcc -O2 -o sqlite_ceiling sqlite_ceiling.c -lsqlite3
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- SQL, verbatim from SQLiteContext.swift ---- */
#define SQL_SUBSCRIBER                                                                                         \
    "SELECT key, tenant_id, id, anonymous, verified, email, email_subscribed, last_seq, event_count, created_at, " \
    "updated_at FROM subscribers WHERE key = ? AND retired = 0"
#define SQL_SUBSCRIBER_BY_ALIAS                                                                                \
    "SELECT s.key, s.tenant_id, s.id, s.anonymous, s.verified, s.email, s.email_subscribed, s.last_seq,\n"        \
    "    s.event_count, s.created_at, s.updated_at\n"                                                               \
    "FROM aliases AS a JOIN subscribers AS s ON s.key = a.subscriber_key\n"                                        \
    "WHERE a.tenant_id = ? AND a.alias = ? AND s.retired = 0"
#define SQL_ADD_ALIAS "INSERT INTO aliases (tenant_id, alias, subscriber_key) VALUES (?, ?, ?)"
/* Merger.mergeUnsaved: the source's ids, counted against the tenant's maxAliases before a merge. */
#define SQL_ALIAS_COUNT "SELECT count(*) FROM aliases WHERE subscriber_key = ?"
/* SQLiteContext.hasIncomingMoves: before an event insert, whether an absorb's events are still
 * moving into the subscriber (then a new event's id is checked against them too). */
#define SQL_HAS_INCOMING_MOVES "SELECT 1 FROM event_moves WHERE target_key = ? LIMIT 1"
#define SQL_INSERT_SUBSCRIBER \
    "INSERT INTO subscribers (tenant_id, id, anonymous, created_at, updated_at) VALUES (?, ?, ?, ?, ?)"
#define SQL_INSERT_EVENT                                                                        \
    "INSERT INTO events (subscriber_key, seq, client_id, name, timestamp, received_at, properties)\n" \
    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (subscriber_key, client_id) DO NOTHING"
#define SQL_UPDATE_SUBSCRIBER                                                                      \
    "UPDATE subscribers SET id = ?, anonymous = ?, verified = ?, email = ?, email_subscribed = ?,\n" \
    "    last_seq = ?, event_count = ?, updated_at = ?\nWHERE key = ?"
#define SQL_ATTRIBUTES "SELECT name, value, set_by_backend FROM attributes WHERE subscriber_key = ? ORDER BY name"
#define SQL_PREFS "SELECT topic, subscribed, updated_at FROM preferences WHERE subscriber_key = ? ORDER BY topic"
#define SQL_DEVICES                                                                                 \
    "SELECT device_id, platform, app_version, os_version, model, locale, time_zone, last_seen_at\n" \
    "FROM devices WHERE subscriber_key = ? ORDER BY last_seen_at DESC, device_id"
/* SQLiteContext.snapshotIfCheap: what a writer job reads to answer with the subscriber (the check,
 * then snapshot(of:)'s one statement, which a reader runs alone). */
#define SQL_SNAPSHOT_CHECK                                                                             \
    "SELECT EXISTS (SELECT 1 FROM aliases WHERE subscriber_key = ?1 LIMIT 1 OFFSET ?2)\n"              \
    "    OR EXISTS (SELECT 1 FROM attributes WHERE subscriber_key = ?1 LIMIT 1 OFFSET ?2)\n"           \
    "    OR EXISTS (SELECT 1 FROM push_subscriptions WHERE subscriber_key = ?1 LIMIT 1 OFFSET ?2)\n"   \
    "    OR EXISTS (SELECT 1 FROM preferences WHERE subscriber_key = ?1 LIMIT 1 OFFSET ?2)\n"          \
    "    OR EXISTS (SELECT 1 FROM devices WHERE subscriber_key = ?1 LIMIT 1 OFFSET ?2)"
#define SQL_SMALL_SNAPSHOT                                                                                                       \
    "SELECT 0, alias, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM aliases WHERE subscriber_key = ?1 AND alias <> ?2\n"          \
    "UNION ALL SELECT 1, name, value, set_by_backend, NULL, NULL, NULL, NULL, NULL FROM attributes\n"                           \
    "    WHERE subscriber_key = ?1\n"                                                                                           \
    "UNION ALL SELECT 2, device_id, token, platform, created_at, updated_at, NULL, NULL, NULL\n"                                \
    "    FROM push_subscriptions WHERE subscriber_key = ?1\n"                                                                   \
    "UNION ALL SELECT 3, topic, subscribed, updated_at, NULL, NULL, NULL, NULL, NULL FROM preferences\n"                        \
    "    WHERE subscriber_key = ?1\n"                                                                                           \
    "UNION ALL SELECT 4, device_id, platform, app_version, os_version, model, locale, time_zone, last_seen_at\n"                \
    "    FROM devices WHERE subscriber_key = ?1"
#define WRITER_SNAPSHOT_PART_LIMIT 16
#define SQL_COPY_EVENTS                                                                                 \
    "INSERT INTO events (subscriber_key, seq, client_id, name, timestamp, received_at, properties)\n"     \
    "SELECT ?1, ?3 + row_number() OVER (ORDER BY seq), client_id, name, timestamp, received_at, properties\n" \
    "FROM events AS source\n"                                                                          \
    "WHERE source.subscriber_key = ?2 AND NOT EXISTS (\n"                                              \
    "    SELECT 1 FROM events AS mine WHERE mine.subscriber_key = ?1 AND mine.client_id = source.client_id)\n" \
    "ORDER BY seq"
#define SQL_MOVE_PUSH "UPDATE push_subscriptions SET subscriber_key = ? WHERE subscriber_key = ?"
#define SQL_EVICT_PUSH                                                                           \
    "DELETE FROM push_subscriptions WHERE subscriber_key = ?1 AND device_id IN (\n"               \
    "    SELECT device_id FROM push_subscriptions WHERE subscriber_key = ?1\n"                     \
    "    ORDER BY updated_at DESC, device_id LIMIT -1 OFFSET ?2)"
#define SQL_REASSIGN_ALIASES "UPDATE aliases SET subscriber_key = ? WHERE subscriber_key = ?"
/* retireSubscriber: the source's events stay for the background purge (not timed here). */
static const char *const SQL_RETIRE[] = {
    "DELETE FROM aliases WHERE subscriber_key = ?",
    "DELETE FROM attributes WHERE subscriber_key = ?",
    "DELETE FROM push_subscriptions WHERE subscriber_key = ?",
    "DELETE FROM preferences WHERE subscriber_key = ?",
    "DELETE FROM devices WHERE subscriber_key = ?",
    "UPDATE subscribers SET retired = 1, id = '$retired:' || key, email = NULL WHERE key = ?",
};

static sqlite3 *db;
static const char *tenant;

static void die(const char *what) {
    fprintf(stderr, "sqlite_ceiling: %s: %s\n", what, sqlite3_errmsg(db));
    exit(1);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static long long wall_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Transaction control, prepared once as the server's Savepoint and TransactionKind statements are
 * (sqlite3_exec would parse the text on every call). */
static const char SQL_SAVEPOINT[] = "SAVEPOINT \"job\"";
static const char SQL_RELEASE[] = "RELEASE SAVEPOINT \"job\"";
static const char SQL_BEGIN_DEFERRED[] = "BEGIN DEFERRED TRANSACTION";
static const char SQL_BEGIN_IMMEDIATE[] = "BEGIN IMMEDIATE TRANSACTION";
static const char SQL_COMMIT[] = "COMMIT TRANSACTION";

static void exec(const char *sql) {
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "sqlite_ceiling: %s: %s\n", sql, err);
        exit(1);
    }
}

/* A tiny statement cache, like the server's: prepared once, reset and cleared before each use. */
#define MAX_STMTS 64
static struct { const char *sql; sqlite3_stmt *stmt; } cache[MAX_STMTS];

static sqlite3_stmt *stmt(const char *sql) {
    for (int i = 0; i < MAX_STMTS; i++) {
        if (cache[i].sql == sql) {
            sqlite3_reset(cache[i].stmt);
            sqlite3_clear_bindings(cache[i].stmt);
            return cache[i].stmt;
        }
        if (!cache[i].sql) {
            if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &cache[i].stmt, NULL) != SQLITE_OK) die(sql);
            cache[i].sql = sql;
            return cache[i].stmt;
        }
    }
    fprintf(stderr, "statement cache full\n");
    exit(1);
}

static void text(sqlite3_stmt *s, int i, const char *v) { sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT); }
static void i64(sqlite3_stmt *s, int i, long long v) { sqlite3_bind_int64(s, i, v); }

/* Steps to the end, counting rows (the server copies every column of every row; we read them too). */
static int run(sqlite3_stmt *s) {
    int rows = 0, rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int n = sqlite3_column_count(s);
        for (int c = 0; c < n; c++) {
            if (sqlite3_column_type(s, c) == SQLITE_TEXT) (void)sqlite3_column_text(s, c);
        }
        rows++;
    }
    if (rc != SQLITE_DONE) die(sqlite3_sql(s));
    return rows;
}

/* A transaction control statement from the cache. */
static void control(const char *sql) { run(stmt(sql)); }

typedef struct {
    long long key, last_seq, event_count, created_at, updated_at;
    int anonymous, verified, email_subscribed;
    char id[160];
} Sub;

static void read_sub(sqlite3_stmt *s, Sub *r) {
    r->key = sqlite3_column_int64(s, 0);
    snprintf(r->id, sizeof r->id, "%s", (const char *)sqlite3_column_text(s, 2));
    r->anonymous = sqlite3_column_int(s, 3);
    r->verified = sqlite3_column_int(s, 4);
    (void)sqlite3_column_text(s, 5);
    r->email_subscribed = sqlite3_column_int(s, 6);
    r->last_seq = sqlite3_column_int64(s, 7);
    r->event_count = sqlite3_column_int64(s, 8);
    r->created_at = sqlite3_column_int64(s, 9);
    r->updated_at = sqlite3_column_int64(s, 10);
}

static void load_sub(long long key, Sub *r) {
    sqlite3_stmt *s = stmt(SQL_SUBSCRIBER);
    i64(s, 1, key);
    if (sqlite3_step(s) != SQLITE_ROW) die("subscriber row");
    read_sub(s, r);
    run(s);
}

/* ctx.subscriber(tenantID:alias:): the alias lookup and the row in one statement. */
static int sub_by_alias(const char *alias, Sub *r) {
    sqlite3_stmt *s = stmt(SQL_SUBSCRIBER_BY_ALIAS);
    text(s, 1, tenant);
    text(s, 2, alias);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        read_sub(s, r);
        run(s);
        return 1;
    }
    if (rc != SQLITE_DONE) die(sqlite3_sql(s));
    return 0;
}

static void update_sub(const Sub *r) {
    sqlite3_stmt *s = stmt(SQL_UPDATE_SUBSCRIBER);
    text(s, 1, r->id);
    i64(s, 2, r->anonymous);
    i64(s, 3, r->verified);
    sqlite3_bind_null(s, 4);
    i64(s, 5, r->email_subscribed);
    i64(s, 6, r->last_seq);
    i64(s, 7, r->event_count);
    i64(s, 8, r->updated_at);
    i64(s, 9, r->key);
    run(s);
}

static int insert_event(long long key, long long seq, const char *client_id, const char *name, long long ts,
                        const char *props) {
    sqlite3_stmt *s = stmt(SQL_INSERT_EVENT);
    i64(s, 1, key);
    i64(s, 2, seq);
    text(s, 3, client_id);
    text(s, 4, name);
    i64(s, 5, ts);
    i64(s, 6, ts);
    if (props) text(s, 7, props); else sqlite3_bind_null(s, 7);
    run(s);
    return sqlite3_changes(db) > 0;
}

/* SQLiteContext.snapshot(of:): what a reader reads to render a subscriber (GET), the five parts
 * in one statement (the server then sorts each part's few rows; not counted here). */
static void snapshot(const Sub *r) {
    sqlite3_stmt *s = stmt(SQL_SMALL_SNAPSHOT); i64(s, 1, r->key); text(s, 2, r->id); run(s);
}

/* SQLiteContext.snapshotIfCheap, on the writer: whether a part has a row past the limit, then the
 * five parts in one statement when none has (the server's writer jobs answer from it; past the
 * limit it reads after the commit instead, which these scenarios never reach). */
static void writer_snapshot(const Sub *r) {
    sqlite3_stmt *s = stmt(SQL_SNAPSHOT_CHECK);
    i64(s, 1, r->key);
    i64(s, 2, WRITER_SNAPSHOT_PART_LIMIT);
    if (sqlite3_step(s) != SQLITE_ROW) die("snapshot check");
    long long big = sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    if (big) return;
    s = stmt(SQL_SMALL_SNAPSHOT); i64(s, 1, r->key); text(s, 2, r->id); run(s);
}

static long long insert_sub(const char *id, int anonymous, long long now) {
    sqlite3_stmt *s = stmt(SQL_INSERT_SUBSCRIBER);
    text(s, 1, tenant); text(s, 2, id); i64(s, 3, anonymous); i64(s, 4, now); i64(s, 5, now);
    run(s);
    long long key = sqlite3_last_insert_rowid(db);
    s = stmt(SQL_ADD_ALIAS);
    text(s, 1, tenant); text(s, 2, id); i64(s, 3, key);
    run(s);
    return key;
}

static void merged_props(char *buf, size_t n, const char *from, const char *shape, long long moved) {
    snprintf(buf, n, "{\"from\":\"%s\",\"shape\":\"%s\",\"eventsMoved\":%lld}", from, shape, moved);
}

/* ---- One request of each kind, as the writer job runs it ---- */

/* Operations.identify → Merger.merge, rename shape, then SubscriberController.reply. */
static void identify_rename(long long anon_index, const char *external_id) {
    char anon[40], client_id[80], props[160];
    long long now = wall_ms();
    snprintf(anon, sizeof anon, "anon_%021lld", anon_index);
    control(SQL_SAVEPOINT);
    Sub r;
    if (sub_by_alias(external_id, &r)) die("external id exists");
    if (!sub_by_alias(anon, &r)) { fprintf(stderr, "anon pool exhausted at %lld\n", anon_index); exit(1); }
    long long key = r.key;
    if (!r.anonymous) { fprintf(stderr, "%s is not anonymous\n", anon); exit(1); }
    sqlite3_stmt *count = stmt(SQL_ALIAS_COUNT); i64(count, 1, key); run(count);
    snprintf(r.id, sizeof r.id, "%s", external_id);
    r.anonymous = 0;
    sqlite3_stmt *s = stmt(SQL_ADD_ALIAS);
    text(s, 1, tenant); text(s, 2, external_id); i64(s, 3, key);
    run(s);
    snprintf(client_id, sizeof client_id, "$subscriber.merged:%s", anon);
    merged_props(props, sizeof props, anon, "rename", 0);
    s = stmt(SQL_HAS_INCOMING_MOVES); i64(s, 1, key); run(s);
    if (insert_event(key, r.last_seq + 1, client_id, "$subscriber.merged", now, props)) {
        r.last_seq++;
        r.event_count++;
    }
    r.updated_at = now;
    update_sub(&r);
    writer_snapshot(&r);
    control(SQL_RELEASE);
}

/* Operations.ingest: resolve the subscriber, insert each event, update the counters once. */
static long long event_serial;
static void ingest(const char *person, int count) {
    char client_id[64];
    long long now = wall_ms();
    control(SQL_SAVEPOINT);
    Sub r;
    if (!sub_by_alias(person, &r)) die("person missing");
    long long key = r.key;
    int accepted = 0;
    sqlite3_stmt *moves = stmt(SQL_HAS_INCOMING_MOVES); i64(moves, 1, key); run(moves);
    for (int i = 0; i < count; i++) {
        snprintf(client_id, sizeof client_id, "c-ev-%lld", ++event_serial);
        if (insert_event(key, r.last_seq + 1, client_id, "screen_view", now, "{\"screen\":\"home\",\"index\":7}")) {
            r.last_seq++;
            accepted++;
        }
    }
    r.event_count += accepted;
    r.updated_at = now;
    update_sub(&r);
    control(SQL_RELEASE);
}

/* GET /v1/subscribers/{id} with the snapshot cache off: alias → row, snapshot, inside the read
 * transaction bench_get begins around it (one a GET, or CEILING_GETS_PER_TXN of them). The key and its tenant come from the server's AuthCache (API/Auth.swift), which
 * reads them at most once a second: not per request, so not here. */
static void get_subscriber(const char *person) {
    Sub r;
    if (!sub_by_alias(person, &r)) die("person missing");
    snapshot(&r);
}

/* ---- seed ---- */

static void seed(long long people, long long anon, long long big, long long big_events) {
    long long now = wall_ms();
    char id[64], props[160], client_id[64];
    exec("BEGIN IMMEDIATE");
    for (long long i = 0; i < people; i++) {
        snprintf(id, sizeof id, "user_%06lld", i);
        long long key = insert_sub(id, 0, now);
        merged_props(props, sizeof props, "anon_seed", "link", 0);
        insert_event(key, 1, "$subscriber.merged:seed", "$subscriber.merged", now, props);
        sqlite3_stmt *s = stmt(SQL_UPDATE_SUBSCRIBER);
        text(s, 1, id); i64(s, 2, 0); i64(s, 3, 0); sqlite3_bind_null(s, 4); i64(s, 5, 0);
        i64(s, 6, 1); i64(s, 7, 1); i64(s, 8, now); i64(s, 9, key);
        run(s);
    }
    for (long long i = 0; i < anon; i++) {
        snprintf(id, sizeof id, "anon_%021lld", i);
        insert_sub(id, 1, now);
    }
    for (long long b = 0; b < big; b++) {
        snprintf(id, sizeof id, "anon_big%018lld", b);
        long long key = insert_sub(id, 1, now);
        for (long long e = 1; e <= big_events; e++) {
            snprintf(client_id, sizeof client_id, "big-%lld-%lld", b, e);
            insert_event(key, e, client_id, "screen_view", now - (big_events - e), "{\"screen\":\"home\",\"index\":7}");
        }
        sqlite3_stmt *s = stmt(SQL_UPDATE_SUBSCRIBER);
        text(s, 1, id); i64(s, 2, 1); i64(s, 3, 0); sqlite3_bind_null(s, 4); i64(s, 5, 0);
        i64(s, 6, big_events); i64(s, 7, big_events); i64(s, 8, now); i64(s, 9, key);
        run(s);
    }
    exec("COMMIT");
    exec("ANALYZE");
    exec("PRAGMA wal_checkpoint(TRUNCATE)");
}

/* ---- bench ---- */

static long long anon_next;
static long long ext_serial;

static double bench_identify(double seconds, int per_txn) {
    char ext[64];
    long long done = 0;
    double start = now_s(), end = start + seconds;
    while (now_s() < end) {
        control(SQL_BEGIN_IMMEDIATE);
        for (int i = 0; i < per_txn; i++) {
            snprintf(ext, sizeof ext, "c-person-%lld", ++ext_serial);
            identify_rename(anon_next++, ext);
        }
        control(SQL_COMMIT);
        done += per_txn;
    }
    return done / (now_s() - start);
}

static double bench_events(double seconds, int per_txn, int batch, long long people) {
    char person[32];
    long long done = 0;
    double start = now_s(), end = start + seconds;
    while (now_s() < end) {
        control(SQL_BEGIN_IMMEDIATE);
        for (int i = 0; i < per_txn; i++) {
            snprintf(person, sizeof person, "user_%06lld", (long long)(random() % people));
            ingest(person, batch);
        }
        control(SQL_COMMIT);
        done += (long long)per_txn * batch;
    }
    return done / (now_s() - start);
}

/* CEILING_GETS_PER_TXN=n (a power of two up to 256; run.sh's second uncached ceiling): n GETs
 * share one read transaction, as the GETs one of the server's loops serves in one wake-up share
 * theirs (DatabaseReaderPool); 1 by default, a transaction each. */
static double bench_get(double seconds, long long people) {
    const char *per_txn_env = getenv("CEILING_GETS_PER_TXN");
    int per_txn = per_txn_env ? atoi(per_txn_env) : 1;
    if (per_txn < 1 || per_txn > 256 || 256 % per_txn) die("CEILING_GETS_PER_TXN");
    char person[32];
    long long done = 0;
    double start = now_s(), end = start + seconds;
    while (now_s() < end) {
        for (int i = 0; i < 256; i += per_txn) {
            control(SQL_BEGIN_DEFERRED);
            for (int j = 0; j < per_txn; j++) {
                snprintf(person, sizeof person, "user_%06lld", (long long)(random() % people));
                get_subscriber(person);
            }
            control(SQL_COMMIT);
        }
        done += 256;
    }
    return done / (now_s() - start);
}

static double bench_pk(double seconds, long long people) {
    long long done = 0;
    double start = now_s(), end = start + seconds;
    control(SQL_BEGIN_DEFERRED);
    while (now_s() < end) {
        for (int i = 0; i < 1024; i++) {
            Sub r;
            load_sub(1 + random() % people, &r);
        }
        done += 1024;
    }
    control(SQL_COMMIT);
    return done / (now_s() - start);
}

/* The copy statement alone, in its own transaction (with its commit), onto person `target`. */
static double bench_copy(long long big_index, long long target_index, int full_absorb) {
    char anon[40], person[32];
    snprintf(anon, sizeof anon, "anon_big%018lld", big_index);
    snprintf(person, sizeof person, "user_%06lld", target_index);
    double start = now_s();
    control(SQL_BEGIN_IMMEDIATE);
    if (full_absorb) control(SQL_SAVEPOINT);
    Sub t, src;
    if (!sub_by_alias(person, &t) || !sub_by_alias(anon, &src)) die("absorb: missing subscriber");
    sqlite3_stmt *s;
    if (full_absorb) {
        /* Merger.mergeUnsaved: both persons' ids counted against maxAliases before the merge. */
        s = stmt(SQL_ALIAS_COUNT); i64(s, 1, t.key); run(s);
        s = stmt(SQL_ALIAS_COUNT); i64(s, 1, src.key); run(s);
    }
    s = stmt(SQL_COPY_EVENTS);
    i64(s, 1, t.key); i64(s, 2, src.key); i64(s, 3, t.last_seq);
    run(s);
    long long moved = sqlite3_changes(db);
    if (full_absorb) {
        /* Merger.absorb after the copy, then the marker event (with its moves probe), update,
         * snapshot. */
        t.last_seq += moved; t.event_count += moved;
        s = stmt(SQL_MOVE_PUSH); i64(s, 1, t.key); i64(s, 2, src.key); run(s);
        s = stmt(SQL_EVICT_PUSH); i64(s, 1, t.key); i64(s, 2, 20); run(s);
        s = stmt(SQL_PREFS); i64(s, 1, t.key); run(s);
        s = stmt(SQL_PREFS); i64(s, 1, src.key); run(s);
        s = stmt(SQL_ATTRIBUTES); i64(s, 1, t.key); run(s);
        s = stmt(SQL_ATTRIBUTES); i64(s, 1, src.key); run(s);
        s = stmt(SQL_DEVICES); i64(s, 1, src.key); run(s);
        s = stmt(SQL_REASSIGN_ALIASES); i64(s, 1, t.key); i64(s, 2, src.key); run(s);
        for (size_t r = 0; r < sizeof SQL_RETIRE / sizeof *SQL_RETIRE; r++) {
            s = stmt(SQL_RETIRE[r]); i64(s, 1, src.key); run(s);
        }
        char client_id[80], props[160];
        snprintf(client_id, sizeof client_id, "$subscriber.merged:%s", anon);
        merged_props(props, sizeof props, anon, "absorb", moved);
        s = stmt(SQL_HAS_INCOMING_MOVES); i64(s, 1, t.key); run(s);
        if (insert_event(t.key, t.last_seq + 1, client_id, "$subscriber.merged", wall_ms(), props)) {
            t.last_seq++; t.event_count++;
        }
        update_sub(&t);
        writer_snapshot(&t);
        control(SQL_RELEASE);
    }
    control(SQL_COMMIT);
    if (moved < 1) die("nothing copied");
    return (now_s() - start) * 1000;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: sqlite_ceiling seed DB TENANT PEOPLE ANON BIG BIG_EVENTS\n"
                        "       sqlite_ceiling bench DB TENANT SECONDS PEOPLE ANON_FROM BIG SCENARIOS\n");
        return 2;
    }
    /* The server's process-wide setting (Database.statementJournalInMemory in
       Sources/SQLite/Database.swift): a savepoint's sub-journal stays in memory up to 8 MiB
       before it moves to a temp file, where SQLite's default is 64 KiB. */
    if (sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL, 8 << 20) != SQLITE_OK) die("config");
    if (sqlite3_open(argv[2], &db) != SQLITE_OK) die("open");
    tenant = argv[3];
    sqlite3_busy_timeout(db, 5000);
    exec("PRAGMA foreign_keys = ON");
    exec("PRAGMA journal_mode = WAL");
    /* CEILING_SYNCHRONOUS=NORMAL (for bench/identify-threads.sh, never run.sh): no fsync in
       COMMIT, so only CPU differs between group sizes. */
    const char *synchronous = getenv("CEILING_SYNCHRONOUS");
    exec(synchronous && !strcmp(synchronous, "NORMAL") ? "PRAGMA synchronous = NORMAL" : "PRAGMA synchronous = FULL");
    if (!strcmp(argv[1], "seed") && argc == 8) {
        seed(atoll(argv[4]), atoll(argv[5]), atoll(argv[6]), atoll(argv[7]));
        printf("seeded\n");
    } else if (!strcmp(argv[1], "bench") && argc == 9) {
        double seconds = atof(argv[4]);
        long long people = atoll(argv[5]);
        anon_next = atoll(argv[6]);
        int big = atoi(argv[7]);
        const char *which = argv[8]; /* comma-separated: identify,events,get,copy */
        srandom(42);
        /* The server checkpoints off the request path; do the same so WAL growth is comparable. */
        exec("PRAGMA wal_autocheckpoint = 0");
        if (strstr(which, "identify")) {
            /* CEILING_PER_TXN: renames a transaction other than 64, and no 1-a-transaction run
               (bench/identify-threads.sh sets it to the server's mean group). */
            const char *per_txn_env = getenv("CEILING_PER_TXN");
            int per_txn = per_txn_env ? atoi(per_txn_env) : 64;
            if (per_txn < 1) die("CEILING_PER_TXN");
            if (!per_txn_env) {
                printf("identify_1txn %.0f req/s\n", bench_identify(seconds, 1));
                exec("PRAGMA wal_checkpoint(PASSIVE)");
            }
            printf("identify_group%d %.0f req/s\n", per_txn, bench_identify(seconds, per_txn));
            exec("PRAGMA wal_checkpoint(PASSIVE)");
        }
        if (strstr(which, "events")) {
            printf("events_group64x50 %.0f events/s\n", bench_events(seconds, 64, 50, people));
            exec("PRAGMA wal_checkpoint(PASSIVE)");
        }
        if (strstr(which, "get")) {
            printf("get_subscriber %.0f req/s\n", bench_get(seconds, people));
            /* CEILING_GET_ONLY: no pk lookups after (bench/get-syscalls.sh counts a GET's calls). */
            if (!getenv("CEILING_GET_ONLY")) printf("pk_lookup %.0f lookups/s\n", bench_pk(seconds, people));
        }
        if (strstr(which, "copy")) {
            for (int b = 0; b < big / 2; b++) {
                printf("copy_10k %.1f ms\n", bench_copy(b, 100 + b, 0));
                exec("PRAGMA wal_checkpoint(PASSIVE)");
            }
            for (int b = big / 2; b < big; b++) {
                printf("absorb_10k_full %.1f ms\n", bench_copy(b, 200 + b, 1));
                exec("PRAGMA wal_checkpoint(PASSIVE)");
            }
        }
    } else {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    for (int i = 0; i < MAX_STMTS && cache[i].sql; i++) sqlite3_finalize(cache[i].stmt);
    sqlite3_close(db);
    return 0;
}

#ifndef BUZZKIT_CSQLITE_SHIM_H
#define BUZZKIT_CSQLITE_SHIM_H
#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift cannot import.
static inline int buzzkit_sqlite3_bind_text_transient(sqlite3_stmt *stmt, int index, const char *text, int length) {
    return sqlite3_bind_text(stmt, index, text, length, SQLITE_TRANSIENT);
}

// Same reason as above, for blobs.
static inline int buzzkit_sqlite3_bind_blob_transient(sqlite3_stmt *stmt, int index, const void *bytes, int length) {
    return sqlite3_bind_blob(stmt, index, bytes, length, SQLITE_TRANSIENT);
}

// sqlite3_db_config is variadic; Swift cannot call variadic C functions.
static inline int buzzkit_sqlite3_db_config_defensive(sqlite3 *db, int on) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, on, (int *)0);
}

// sqlite3_config is variadic too. Memory statistics take a process-wide mutex on every
// sqlite3_malloc, which our reader threads and the writer then contend on; we never read them.
static inline int buzzkit_sqlite3_config_memstatus(int on) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, on);
}

// How many bytes of a savepoint's sub-journal (the pages it changed, as they were) stay in
// memory before SQLite moves it to a temp file.
static inline int buzzkit_sqlite3_config_stmtjrnl_spill(int bytes) {
    return sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL, bytes);
}
#endif

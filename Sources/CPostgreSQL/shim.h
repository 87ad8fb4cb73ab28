#ifndef BUZZKIT_CPOSTGRESQL_SHIM_H
#define BUZZKIT_CPOSTGRESQL_SHIM_H
// Debian installs libpq's headers under /usr/include/postgresql, which is not on the default
// include path; naming the directory here keeps the package free of -I flags.
#include <postgresql/libpq-fe.h>
#endif

// libpq as seen from Swift; pkg-config adds -I/usr/include/postgresql.
#ifndef TG_CPOSTGRES_SHIM_H
#define TG_CPOSTGRES_SHIM_H
#include <libpq-fe.h>
#endif

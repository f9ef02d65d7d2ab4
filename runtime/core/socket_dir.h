/* Where the bridge socket lives by default: a directory only this user can enter, so no other
 * local user can bind the path first or connect to it (docs/operations.md). */
#ifndef KC_CORE_SOCKET_DIR_H
#define KC_CORE_SOCKET_DIR_H

#include <stddef.h>

#include "error.h"

/* The default bridge URL, "ipc:///tmp/kcycle-<euid>/bridge.ipc", into out. 0, or -ENAMETOOLONG. */
int socket_dir_default_url(char *out, size_t size);

/* Before listening on or dialing url: when it is an ipc:// path in the default directory,
 * create that directory (mode 0700) if missing and refuse (-EACCES, err naming the directory,
 * its owner and mode, and what to do) one that is not a directory owned by this user with no
 * group or other access. Other URLs are left to the peer check. 0 when url may be used. */
int socket_dir_check(const char *url, struct kc_error *err);

#endif

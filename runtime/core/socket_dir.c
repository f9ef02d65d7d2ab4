/* The bridge socket's private directory. A socket file's own mode is not enough: connect()
 * and bind() need search and write access to the directory, so a 0700 directory owned by us
 * keeps every other user (root aside) off the path. The peer uid check on each connection
 * (runtime/core/ipc_peer.c) covers sockets configured elsewhere. */
#include "socket_dir.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int default_dir(char *out, size_t size)
{
    int n = snprintf(out, size, "/tmp/kcycle-%u", (unsigned)geteuid());
    return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int socket_dir_default_url(char *out, size_t size)
{
    char dir[64];
    default_dir(dir, sizeof(dir));
    int n = snprintf(out, size, "ipc://%s/bridge.ipc", dir);
    return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int socket_dir_check(const char *url, struct kc_error *err)
{
    char dir[64];
    default_dir(dir, sizeof(dir));
    size_t len = strlen(dir);
    if (strncmp(url, "ipc://", 6) != 0 || strncmp(url + 6, dir, len) != 0 || url[6 + len] != '/')
        return 0;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return kc_error_set(err, -errno, "cannot create the socket directory %s: %s", dir,
                            strerror(errno));
    struct stat st;
    if (lstat(dir, &st) < 0)
        return kc_error_set(err, -errno, "socket directory %s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0)
        return kc_error_set(err, -EACCES,
                            "refusing the socket directory %s: it is %s owned by uid %u with mode "
                            "%03o, where a directory of uid %u with mode 0700 is required (another "
                            "user could reach the socket); remove it, or set bridge.address "
                            "(--bridge/--listen) to a socket in a private directory",
                            dir, S_ISDIR(st.st_mode) ? "a directory" : "not a directory",
                            (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777),
                            (unsigned)geteuid());
    return 0;
}

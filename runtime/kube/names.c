/* Object names and namespaces checked before they go into an API path.
 *
 * The bridge builds request paths ("/api/v1/namespaces/NS/pods/NAME/binding") from what the
 * scheduler and its plugins send. A name holding '/', '?', '#', '%' or ".." would address
 * another resource (another namespace's secrets, a subresource, a query), so every namespace
 * and name is checked against the API server's own rules first: a namespace is a DNS-1123
 * label (lower-case alphanumerics and '-', starting and ending alphanumeric, at most 63), a
 * name a DNS-1123 subdomain (labels joined by '.', at most 253). Anything that passes has
 * no character a path or URL treats specially, so it needs no escaping. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "kube.h"

static bool alnum_lower(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* One DNS-1123 label of len bytes at s: [a-z0-9]([-a-z0-9]*[a-z0-9])? */
static bool label_ok(const char *s, size_t len)
{
    if (len == 0 || len > 63 || !alnum_lower(s[0]) || !alnum_lower(s[len - 1]))
        return false;
    for (size_t i = 1; i + 1 < len; i++)
        if (!alnum_lower(s[i]) && s[i] != '-')
            return false;
    return true;
}

int kube_check_name(const char *what, const char *value, bool label, char *why, size_t size)
{
    if (value == NULL || value[0] == '\0') {
        snprintf(why, size, "%s is empty", what);
        return -EINVAL;
    }
    size_t len = strlen(value);
    bool ok;
    if (label) {
        ok = label_ok(value, len);
    } else {
        ok = len <= 253;
        for (const char *p = value; ok;) {
            const char *dot = strchr(p, '.');
            size_t n = dot != NULL ? (size_t)(dot - p) : strlen(p);
            ok = label_ok(p, n);
            if (dot == NULL)
                break;
            p = dot + 1;
        }
    }
    if (!ok) {
        /* the value may hold anything: quote a bounded, printable prefix of it */
        char shown[80];
        size_t n = 0;
        for (size_t i = 0; value[i] != '\0' && n + 1 < sizeof(shown); i++)
            shown[n++] = value[i] >= 0x20 && value[i] < 0x7f ? value[i] : '?';
        shown[n] = '\0';
        snprintf(why, size, "%s \"%s%s\" is not a valid %s", what, shown,
                 value[n] != '\0' ? "..." : "",
                 label ? "DNS-1123 label (lower-case alphanumerics and '-', at most 63)"
                       : "DNS-1123 subdomain (lower-case alphanumerics, '-' and '.', at most 253)");
        return -EINVAL;
    }
    return 0;
}

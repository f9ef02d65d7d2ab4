/* Where the API server is and how to authenticate: a kubeconfig file (errors name
 * file:line:column) or the in-cluster service account. */
#include "kube.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tree.h"

#define SERVICE_ACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

void kube_config_free(struct kube_config *c)
{
    if (c == NULL)
        return;
    free(c->server);
    free(c->ca_file);
    free(c->ca_data);
    free(c->token);
    free(c->token_file);
    free(c->client_cert_file);
    free(c->client_key_file);
    free(c->client_cert_data);
    free(c->client_key_data);
    free(c->namespace);
    memset(c, 0, sizeof(*c));
}

/* ---- base64 (RFC 4648, standard alphabet; padding optional, whitespace skipped) ---- */

static int base64_value(char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    if (ch == '+')
        return 62;
    if (ch == '/')
        return 63;
    return -1;
}

/* Decoded bytes, malloc'd and NUL-terminated; -EINVAL on a character outside the alphabet or
 * a dangling last character. */
static int base64_decode(const char *in, char **out)
{
    size_t len = strlen(in);
    char *decoded = malloc(len / 4 * 3 + 4);
    if (decoded == NULL)
        return -ENOMEM;
    size_t n = 0;
    uint32_t bits = 0;
    int count = 0;
    bool padding = false;
    for (const char *p = in; *p != '\0'; p++) {
        if (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
            continue;
        if (*p == '=') {
            padding = true;
            continue;
        }
        int value = base64_value(*p);
        if (value < 0 || padding) {
            free(decoded);
            return -EINVAL;
        }
        bits = bits << 6 | (uint32_t)value;
        if (++count == 4) {
            decoded[n++] = (char)(bits >> 16);
            decoded[n++] = (char)(bits >> 8);
            decoded[n++] = (char)bits;
            bits = 0;
            count = 0;
        }
    }
    if (count == 1) {
        free(decoded);
        return -EINVAL;
    }
    if (count == 2) {
        decoded[n++] = (char)(bits >> 4);
    } else if (count == 3) {
        decoded[n++] = (char)(bits >> 10);
        decoded[n++] = (char)(bits >> 2);
    }
    decoded[n] = '\0';
    *out = decoded;
    return 0;
}

/* ---- kubeconfig ---- */

static int no_memory(struct kc_error *err, const char *what)
{
    return kc_error_set(err, -ENOMEM, "%s: out of memory", what);
}

/* A string value of map t at key, or NULL when absent or null. */
static int optional_string(const struct tree *t, const char *key, const char *what,
                           const char **out, struct kc_error *err)
{
    *out = NULL;
    const struct tree *value = tree_get(t, key);
    if (value == NULL || tree_is_null(value))
        return 0;
    return tree_string(value, what, out, err);
}

/* The entry of list `list` (items {name, <inner>: {...}}) whose name is `name`; `ref` is the
 * node that named it, for the message when there is none. */
static int find_named(const struct tree *root, const char *list, const char *inner,
                      const char *name, const struct tree *ref, const char *ref_key,
                      const struct tree **out, struct kc_error *err)
{
    const struct tree *items = tree_get(root, list);
    if (items != NULL && items->type == TREE_SEQ) {
        for (uint32_t i = 0; i < items->count; i++) {
            const struct tree *entry = items->items[i];
            const struct tree *entry_name = tree_get(entry, "name");
            if (entry_name == NULL || entry_name->type != TREE_SCALAR ||
                strcmp(entry_name->scalar, name) != 0)
                continue;
            const struct tree *body = tree_get(entry, inner);
            if (body == NULL || body->type != TREE_MAP)
                return tree_error(body != NULL ? body : entry, err, -EINVAL, inner,
                                  "%s '%s' has no '%s' map; expected %s: {...}", inner, name, inner,
                                  inner);
            *out = body;
            return 0;
        }
    }
    return tree_error(ref, err, -EINVAL, ref_key,
                      "no %s named '%s' in '%s'; add it to the kubeconfig or pick another "
                      "context",
                      inner, name, list);
}

/* path as written when absolute, else relative to the kubeconfig's folder. */
static char *resolve_path(const char *kubeconfig, const char *path)
{
    if (path[0] == '/')
        return strdup(path);
    const char *slash = strrchr(kubeconfig, '/');
    if (slash == NULL)
        return strdup(path);
    size_t dir_len = (size_t)(slash - kubeconfig);
    size_t len = dir_len + 1 + strlen(path) + 1;
    char *joined = malloc(len);
    if (joined != NULL)
        snprintf(joined, len, "%.*s/%s", (int)dir_len, kubeconfig, path);
    return joined;
}

/* A file path key: resolved against the kubeconfig's folder into *out (NULL when absent). */
static int path_key(const char *kubeconfig, const struct tree *t, const char *key, char **out,
                    struct kc_error *err)
{
    const char *value;
    int rc = optional_string(t, key, key, &value, err);
    if (rc != 0 || value == NULL)
        return rc;
    *out = resolve_path(kubeconfig, value);
    return *out == NULL ? no_memory(err, kubeconfig) : 0;
}

/* A *-data key: base64-decoded into *out (NULL when absent). */
static int data_key(const struct tree *t, const char *key, char **out, struct kc_error *err)
{
    const char *value;
    int rc = optional_string(t, key, key, &value, err);
    if (rc != 0 || value == NULL)
        return rc;
    rc = base64_decode(value, out);
    if (rc == -ENOMEM)
        return no_memory(err, key);
    if (rc != 0)
        return tree_error(tree_get(t, key), err, rc, key,
                          "not valid base64; expected the base64 of a PEM file (base64 -w0 "
                          "FILE)");
    return 0;
}

static int string_key(const struct tree *t, const char *key, char **out, struct kc_error *err)
{
    const char *value;
    int rc = optional_string(t, key, key, &value, err);
    if (rc != 0 || value == NULL)
        return rc;
    *out = strdup(value);
    return *out == NULL ? no_memory(err, key) : 0;
}

static int read_cluster(const char *path, const struct tree *cluster, struct kube_config *out,
                        struct kc_error *err)
{
    const struct tree *server = tree_get(cluster, "server");
    if (server == NULL || tree_is_null(server))
        return tree_error(server != NULL ? server : cluster, err, -EINVAL, "server",
                          "missing; expected the API server's URL (https://host:port)");
    int rc = string_key(cluster, "server", &out->server, err);
    if (rc != 0)
        return rc;
    if (strncmp(out->server, "https://", 8) != 0 && strncmp(out->server, "http://", 7) != 0)
        return tree_error(server, err, -EINVAL, "server",
                          "'%s' is not a URL; expected https://host:port", out->server);
    size_t len = strlen(out->server);
    while (len > 0 && out->server[len - 1] == '/')
        out->server[--len] = '\0';
    if ((rc = path_key(path, cluster, "certificate-authority", &out->ca_file, err)) != 0 ||
        (rc = data_key(cluster, "certificate-authority-data", &out->ca_data, err)) != 0)
        return rc;
    const struct tree *insecure = tree_get(cluster, "insecure-skip-tls-verify");
    if (insecure != NULL && !tree_is_null(insecure))
        return tree_bool(insecure, "insecure-skip-tls-verify", &out->insecure, err);
    return 0;
}

static int read_user(const char *path, const struct tree *user, struct kube_config *out,
                     struct kc_error *err)
{
    static const char *const unsupported[] = {"exec", "auth-provider", NULL};
    for (const char *const *key = unsupported; *key != NULL; key++) {
        const struct tree *value = tree_get(user, *key);
        if (value != NULL && !tree_is_null(value))
            return tree_error(value, err, -ENOTSUP, *key,
                              "credential plugins are not supported; use token, tokenFile or "
                              "client-certificate and client-key");
    }
    int rc;
    if ((rc = string_key(user, "token", &out->token, err)) != 0 ||
        (rc = path_key(path, user, "tokenFile", &out->token_file, err)) != 0 ||
        (rc = path_key(path, user, "client-certificate", &out->client_cert_file, err)) != 0 ||
        (rc = path_key(path, user, "client-key", &out->client_key_file, err)) != 0 ||
        (rc = data_key(user, "client-certificate-data", &out->client_cert_data, err)) != 0 ||
        (rc = data_key(user, "client-key-data", &out->client_key_data, err)) != 0)
        return rc;
    bool has_cert = out->client_cert_file != NULL || out->client_cert_data != NULL;
    bool has_key = out->client_key_file != NULL || out->client_key_data != NULL;
    if (has_cert != has_key)
        return tree_error(user, err, -EINVAL, has_cert ? "client-key" : "client-certificate",
                          "missing; a client certificate needs its key and the other way round");
    return 0;
}

static int read_kubeconfig(const char *path, const struct tree *root, const char *context,
                           struct kube_config *out, struct kc_error *err)
{
    if (root->type != TREE_MAP)
        return tree_error(root, err, -EINVAL, "kubeconfig", "expected a map (a kubeconfig file)");
    const struct tree *context_ref = NULL;
    if (context == NULL) {
        context_ref = tree_get(root, "current-context");
        if (context_ref == NULL || tree_is_null(context_ref) || context_ref->type != TREE_SCALAR ||
            context_ref->scalar[0] == '\0')
            return tree_error(context_ref != NULL ? context_ref : root, err, -EINVAL,
                              "current-context",
                              "missing; set current-context or name a context explicitly");
        context = context_ref->scalar;
    }
    const struct tree *ctx;
    int rc =
        find_named(root, "contexts", "context", context, context_ref != NULL ? context_ref : root,
                   context_ref != NULL ? "current-context" : "contexts", &ctx, err);
    if (rc != 0)
        return rc;

    const struct tree *cluster_ref = tree_get(ctx, "cluster");
    if (cluster_ref == NULL || cluster_ref->type != TREE_SCALAR || tree_is_null(cluster_ref))
        return tree_error(cluster_ref != NULL ? cluster_ref : ctx, err, -EINVAL, "cluster",
                          "missing in context '%s'; expected the name of a cluster", context);
    const struct tree *cluster;
    rc = find_named(root, "clusters", "cluster", cluster_ref->scalar, cluster_ref, "cluster",
                    &cluster, err);
    if (rc != 0 || (rc = read_cluster(path, cluster, out, err)) != 0)
        return rc;

    /* A context without a user is anonymous; a user it names must exist. */
    const struct tree *user_ref = tree_get(ctx, "user");
    if (user_ref != NULL && !tree_is_null(user_ref)) {
        if (user_ref->type != TREE_SCALAR)
            return tree_error(user_ref, err, -EINVAL, "user", "expected the name of a user");
        const struct tree *user;
        rc = find_named(root, "users", "user", user_ref->scalar, user_ref, "user", &user, err);
        if (rc != 0 || (rc = read_user(path, user, out, err)) != 0)
            return rc;
    }
    if ((rc = string_key(ctx, "namespace", &out->namespace, err)) != 0)
        return rc;
    if (out->namespace == NULL && (out->namespace = strdup("default")) == NULL)
        return no_memory(err, path);
    return 0;
}

int kube_config_from_kubeconfig(const char *path, const char *context, struct kube_config *out,
                                struct kc_error *err)
{
    memset(out, 0, sizeof(*out));
    struct tree *root;
    int rc = tree_parse_file(path, &root, err);
    if (rc != 0)
        return rc;
    rc = read_kubeconfig(path, root, context, out, err);
    tree_free(root);
    if (rc != 0)
        kube_config_free(out);
    return rc;
}

/* ---- in-cluster ---- */

/* The file's text without surrounding whitespace, malloc'd; -errno when unreadable. */
static int read_trimmed(const char *path, char **out)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -errno;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *start = buf;
    while (*start == ' ' || *start == '\n' || *start == '\r' || *start == '\t')
        start++;
    size_t len = strlen(start);
    while (len > 0 && (start[len - 1] == ' ' || start[len - 1] == '\n' || start[len - 1] == '\r' ||
                       start[len - 1] == '\t'))
        start[--len] = '\0';
    *out = strdup(start);
    return *out == NULL ? -ENOMEM : 0;
}

static char *join(const char *dir, const char *file)
{
    size_t len = strlen(dir) + 1 + strlen(file) + 1;
    char *path = malloc(len);
    if (path != NULL)
        snprintf(path, len, "%s/%s", dir, file);
    return path;
}

static int in_cluster(const char *root, struct kube_config *out, struct kc_error *err)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    if (host == NULL || host[0] == '\0' || port == NULL || port[0] == '\0')
        return kc_error_set(err, -ENOENT,
                            "not running in a cluster: KUBERNETES_SERVICE_HOST and "
                            "KUBERNETES_SERVICE_PORT are not set; pass a kubeconfig instead");
    bool ipv6 = strchr(host, ':') != NULL;
    size_t len = strlen(host) + strlen(port) + 16;
    if ((out->server = malloc(len)) == NULL)
        return no_memory(err, "in-cluster config");
    snprintf(out->server, len, ipv6 ? "https://[%s]:%s" : "https://%s:%s", host, port);

    if ((out->token_file = join(root, "token")) == NULL)
        return no_memory(err, "in-cluster config");
    char *token;
    int rc = read_trimmed(out->token_file, &token);
    if (rc != 0)
        return kc_error_set(err, rc == -ENOMEM ? rc : -ENOENT,
                            "not running in a cluster: cannot read the service account token "
                            "%s: %s; mount a service account or pass a kubeconfig",
                            out->token_file, strerror(-rc));
    free(token);

    /* Without the CA file the system's CAs verify the server; verification stays on. */
    if ((out->ca_file = join(root, "ca.crt")) == NULL)
        return no_memory(err, "in-cluster config");
    if (access(out->ca_file, R_OK) != 0) {
        free(out->ca_file);
        out->ca_file = NULL;
    }

    const char *namespace = getenv("POD_NAMESPACE");
    if (namespace != NULL && namespace[0] != '\0') {
        out->namespace = strdup(namespace);
    } else {
        char *path = join(root, "namespace");
        if (path == NULL || read_trimmed(path, &out->namespace) != 0 || out->namespace[0] == '\0') {
            free(out->namespace);
            out->namespace = strdup("default");
        }
        free(path);
    }
    return out->namespace == NULL ? no_memory(err, "in-cluster config") : 0;
}

int kube_config_in_cluster(const char *root, struct kube_config *out, struct kc_error *err)
{
    memset(out, 0, sizeof(*out));
    int rc = in_cluster(root != NULL ? root : SERVICE_ACCOUNT_DIR, out, err);
    if (rc != 0)
        kube_config_free(out);
    return rc;
}

/* kube config: kubeconfig contexts, credentials, relative paths, base64 data and the
 * file:line:column of every error; the in-cluster service account from a temporary root. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "kube.h"

static char dir[64];

static int make_dir(void **state)
{
    snprintf(dir, sizeof(dir), "/tmp/kcycle-kube-config-XXXXXX");
    return mkdtemp(dir) != NULL ? 0 : -1;
}

static void remove_tree(const char *path)
{
    char command[256];
    snprintf(command, sizeof(command), "rm -rf '%s'", path);
    if (system(command) != 0)
        fprintf(stderr, "could not remove %s\n", path);
}

static int remove_dir(void **state)
{
    remove_tree(dir);
    return 0;
}

static char *path_in(const char *name)
{
    static char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return path;
}

static const char *write_file(const char *name, const char *text)
{
    const char *path = path_in(name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static const char two_contexts[] = "apiVersion: v1\n"
                                   "kind: Config\n"
                                   "current-context: main\n"
                                   "clusters:\n"
                                   "- name: prod\n"
                                   "  cluster:\n"
                                   "    server: https://prod.example:6443/\n"
                                   "    certificate-authority: certs/ca.crt\n"
                                   "- name: lab\n"
                                   "  cluster:\n"
                                   "    server: https://lab.example:443\n"
                                   "    certificate-authority: /etc/lab/ca.crt\n"
                                   "    insecure-skip-tls-verify: true\n"
                                   "users:\n"
                                   "- name: admin\n"
                                   "  user:\n"
                                   "    token: abc.def\n"
                                   "- name: robot\n"
                                   "  user:\n"
                                   "    tokenFile: secrets/token\n"
                                   "contexts:\n"
                                   "- name: main\n"
                                   "  context:\n"
                                   "    cluster: prod\n"
                                   "    user: admin\n"
                                   "    namespace: team-a\n"
                                   "- name: lab\n"
                                   "  context:\n"
                                   "    cluster: lab\n"
                                   "    user: robot\n";

static void current_context_picks_cluster_user_and_namespace(void **state)
{
    const char *path = write_file("config", two_contexts);
    struct kube_config cfg;
    struct kc_error err = {{0}};
    int rc = kube_config_from_kubeconfig(path, NULL, &cfg, &err);
    if (rc != 0)
        fail_msg("%s", err.message);
    assert_string_equal(cfg.server, "https://prod.example:6443");
    assert_string_equal(cfg.token, "abc.def");
    assert_null(cfg.token_file);
    assert_string_equal(cfg.namespace, "team-a");
    assert_false(cfg.insecure);
    char want[256];
    snprintf(want, sizeof(want), "%s/certs/ca.crt", dir);
    assert_string_equal(cfg.ca_file, want);
    assert_null(cfg.ca_data);
    kube_config_free(&cfg);
}

static void an_explicit_context_wins_and_token_file_is_relative_to_the_kubeconfig(void **state)
{
    const char *path = write_file("config", two_contexts);
    struct kube_config cfg;
    struct kc_error err = {{0}};
    int rc = kube_config_from_kubeconfig(path, "lab", &cfg, &err);
    if (rc != 0)
        fail_msg("%s", err.message);
    assert_string_equal(cfg.server, "https://lab.example:443");
    assert_null(cfg.token);
    char want[256];
    snprintf(want, sizeof(want), "%s/secrets/token", dir);
    assert_string_equal(cfg.token_file, want);
    assert_string_equal(cfg.ca_file, "/etc/lab/ca.crt"); /* absolute stays */
    assert_true(cfg.insecure);
    assert_string_equal(cfg.namespace, "default");
    kube_config_free(&cfg);
}

static void data_fields_are_base64_decoded(void **state)
{
    /* base64 of "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", "cert" and
     * "key!" (the last two with and without padding) */
    const char *path = write_file(
        "config",
        "current-context: c\n"
        "clusters:\n"
        "- name: k\n"
        "  cluster:\n"
        "    server: https://10.1.2.3:6443\n"
        "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tL"
        "S1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=\n"
        "users:\n"
        "- name: u\n"
        "  user:\n"
        "    client-certificate-data: Y2VydA==\n"
        "    client-key-data: a2V5IQ\n"
        "contexts:\n"
        "- name: c\n"
        "  context: {cluster: k, user: u}\n");
    struct kube_config cfg;
    struct kc_error err = {{0}};
    int rc = kube_config_from_kubeconfig(path, NULL, &cfg, &err);
    if (rc != 0)
        fail_msg("%s", err.message);
    assert_string_equal(cfg.ca_data,
                        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    assert_null(cfg.ca_file);
    assert_string_equal(cfg.client_cert_data, "cert");
    assert_string_equal(cfg.client_key_data, "key!");
    assert_null(cfg.token);
    kube_config_free(&cfg);
}

static void client_certificate_files_are_resolved(void **state)
{
    const char *path = write_file("config", "current-context: c\n"
                                            "clusters:\n"
                                            "- name: k\n"
                                            "  cluster: {server: 'http://127.0.0.1:8080'}\n"
                                            "users:\n"
                                            "- name: u\n"
                                            "  user:\n"
                                            "    client-certificate: pki/client.crt\n"
                                            "    client-key: pki/client.key\n"
                                            "contexts:\n"
                                            "- name: c\n"
                                            "  context: {cluster: k, user: u, namespace: ns}\n");
    struct kube_config cfg;
    struct kc_error err = {{0}};
    int rc = kube_config_from_kubeconfig(path, NULL, &cfg, &err);
    if (rc != 0)
        fail_msg("%s", err.message);
    char want[256];
    snprintf(want, sizeof(want), "%s/pki/client.crt", dir);
    assert_string_equal(cfg.client_cert_file, want);
    snprintf(want, sizeof(want), "%s/pki/client.key", dir);
    assert_string_equal(cfg.client_key_file, want);
    assert_string_equal(cfg.server, "http://127.0.0.1:8080");
    assert_string_equal(cfg.namespace, "ns");
    kube_config_free(&cfg);
}

static void assert_config_error(const char *text, const char *context, int code,
                                const char *message_after_path)
{
    const char *path = write_file("config", text);
    struct kube_config cfg;
    struct kc_error err = {{0}};
    assert_int_equal(kube_config_from_kubeconfig(path, context, &cfg, &err), code);
    assert_null(cfg.server);
    char want[1024];
    snprintf(want, sizeof(want), "%s%s", path, message_after_path);
    assert_string_equal(err.message, want);
}

static void a_missing_cluster_names_the_context_line(void **state)
{
    assert_config_error("current-context: c\n"
                        "clusters: []\n"
                        "contexts:\n"
                        "- name: c\n"
                        "  context:\n"
                        "    cluster: nowhere\n",
                        NULL, -EINVAL,
                        ":6:14: key 'cluster': no cluster named 'nowhere' in 'clusters'; add it "
                        "to the kubeconfig or pick another context");
}

static void a_missing_user_names_the_context_line(void **state)
{
    assert_config_error("current-context: c\n"
                        "clusters:\n"
                        "- name: k\n"
                        "  cluster: {server: 'https://k:6443'}\n"
                        "users:\n"
                        "- name: someone-else\n"
                        "  user: {token: x}\n"
                        "contexts:\n"
                        "- name: c\n"
                        "  context:\n"
                        "    cluster: k\n"
                        "    user: ghost\n",
                        NULL, -EINVAL,
                        ":12:11: key 'user': no user named 'ghost' in 'users'; add it to the "
                        "kubeconfig or pick another context");
}

static void a_missing_server_names_the_cluster(void **state)
{
    assert_config_error("current-context: c\n"
                        "clusters:\n"
                        "- name: k\n"
                        "  cluster:\n"
                        "    certificate-authority: ca.crt\n"
                        "contexts:\n"
                        "- name: c\n"
                        "  context: {cluster: k}\n",
                        NULL, -EINVAL,
                        ":5:5: key 'server': missing; expected the API server's URL "
                        "(https://host:port)");
}

static void a_missing_context_names_current_context(void **state)
{
    assert_config_error("current-context: gone\n"
                        "contexts:\n"
                        "- name: c\n"
                        "  context: {cluster: k}\n",
                        NULL, -EINVAL,
                        ":1:18: key 'current-context': no context named 'gone' in 'contexts'; "
                        "add it to the kubeconfig or pick another context");
    assert_config_error("clusters: []\n", NULL, -EINVAL,
                        ":1:1: key 'current-context': missing; set current-context or name a "
                        "context explicitly");
}

static void bad_base64_and_credential_plugins_are_refused_with_positions(void **state)
{
    assert_config_error("current-context: c\n"
                        "clusters:\n"
                        "- name: k\n"
                        "  cluster:\n"
                        "    server: https://k\n"
                        "    certificate-authority-data: 'not base64!'\n"
                        "contexts:\n"
                        "- name: c\n"
                        "  context: {cluster: k}\n",
                        NULL, -EINVAL,
                        ":6:33: key 'certificate-authority-data': not valid base64; expected the "
                        "base64 of a PEM file (base64 -w0 FILE)");
    assert_config_error("current-context: c\n"
                        "clusters:\n"
                        "- name: k\n"
                        "  cluster: {server: 'https://k'}\n"
                        "users:\n"
                        "- name: u\n"
                        "  user:\n"
                        "    exec: {command: aws}\n"
                        "contexts:\n"
                        "- name: c\n"
                        "  context: {cluster: k, user: u}\n",
                        NULL, -ENOTSUP,
                        ":8:11: key 'exec': credential plugins are not supported; use token, "
                        "tokenFile or client-certificate and client-key");
}

static void a_missing_kubeconfig_is_enoent(void **state)
{
    struct kube_config cfg;
    struct kc_error err = {{0}};
    assert_int_equal(kube_config_from_kubeconfig(path_in("absent"), NULL, &cfg, &err), -ENOENT);
    assert_non_null(strstr(err.message, "absent: cannot open"));
}

/* ---- in-cluster ---- */

static void in_cluster_reads_the_service_account(void **state)
{
    char root[256];
    snprintf(root, sizeof(root), "%s/sa", dir);
    mkdir(root, 0700);
    write_file("sa/token", "eyJhbGciOi.token\n");
    write_file("sa/ca.crt", "-----BEGIN CERTIFICATE-----\n");
    write_file("sa/namespace", "kcycle-system\n");
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    unsetenv("POD_NAMESPACE");
    struct kube_config cfg;
    struct kc_error err = {{0}};
    int rc = kube_config_in_cluster(root, &cfg, &err);
    if (rc != 0)
        fail_msg("%s", err.message);
    assert_string_equal(cfg.server, "https://10.96.0.1:443");
    char want[300];
    snprintf(want, sizeof(want), "%s/token", root);
    assert_string_equal(cfg.token_file, want);
    snprintf(want, sizeof(want), "%s/ca.crt", root);
    assert_string_equal(cfg.ca_file, want);
    assert_string_equal(cfg.namespace, "kcycle-system");
    assert_false(cfg.insecure);
    kube_config_free(&cfg);

    /* $POD_NAMESPACE wins over the file; an IPv6 host gets brackets */
    setenv("POD_NAMESPACE", "from-env", 1);
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    rc = kube_config_in_cluster(root, &cfg, &err);
    if (rc != 0)
        fail_msg("%s", err.message);
    assert_string_equal(cfg.namespace, "from-env");
    assert_string_equal(cfg.server, "https://[fd00::1]:443");
    kube_config_free(&cfg);
    unsetenv("POD_NAMESPACE");
}

static void outside_a_cluster_is_enoent_with_a_message(void **state)
{
    struct kube_config cfg;
    struct kc_error err = {{0}};
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    assert_int_equal(kube_config_in_cluster(dir, &cfg, &err), -ENOENT);
    assert_non_null(strstr(err.message, "KUBERNETES_SERVICE_HOST"));
    assert_null(cfg.server);

    /* the variables alone are not enough: the token must be there */
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    char root[256];
    snprintf(root, sizeof(root), "%s/empty", dir);
    mkdir(root, 0700);
    assert_int_equal(kube_config_in_cluster(root, &cfg, &err), -ENOENT);
    assert_non_null(strstr(err.message, "/empty/token"));
    assert_null(cfg.server);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(current_context_picks_cluster_user_and_namespace),
        cmocka_unit_test(an_explicit_context_wins_and_token_file_is_relative_to_the_kubeconfig),
        cmocka_unit_test(data_fields_are_base64_decoded),
        cmocka_unit_test(client_certificate_files_are_resolved),
        cmocka_unit_test(a_missing_cluster_names_the_context_line),
        cmocka_unit_test(a_missing_user_names_the_context_line),
        cmocka_unit_test(a_missing_server_names_the_cluster),
        cmocka_unit_test(a_missing_context_names_current_context),
        cmocka_unit_test(bad_base64_and_credential_plugins_are_refused_with_positions),
        cmocka_unit_test(a_missing_kubeconfig_is_enoent),
        cmocka_unit_test(in_cluster_reads_the_service_account),
        cmocka_unit_test(outside_a_cluster_is_enoent_with_a_message),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}

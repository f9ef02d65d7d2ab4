/* kube-scheduler's InterPodAffinity filtering and scoring cases (required affinity and
 * anti-affinity of the pod and of the placed pods, namespaces, namespaceSelector, matchLabelKeys
 * / mismatchLabelKeys, preferred weights and hardPodAffinityWeight) over nodes node-a (region
 * r1, zone z1), node-b (r1, z2), node-x (r2, z3), in a small notation both tests of the plugin
 * read: test_interpodaffinity_harness.c runs them on the harness, test_interpodaffinity.c
 * builds its index-life fixtures with the same notation. Namespaces ns1 (team=a) and ns2
 * (team=b) exist. */
#ifndef KC_PLUGINS_AFFINITY_CASES_H
#define KC_PLUGINS_AFFINITY_CASES_H

#define REASON_AFFINITY "node(s) didn't match pod affinity rules"
#define REASON_ANTI "node(s) didn't match pod anti-affinity rules"
#define REASON_EXISTING "node(s) didn't satisfy existing pods anti-affinity rules"

#define REQ "\"requiredDuringSchedulingIgnoredDuringExecution\":["
#define PREF "\"preferredDuringSchedulingIgnoredDuringExecution\":["
#define REQ_AFF(t) "{\"podAffinity\":{" REQ t "]}}"
#define REQ_ANTI(t) "{\"podAntiAffinity\":{" REQ t "]}}"
#define REQ_BOTH(a, b) "{\"podAffinity\":{" REQ a "]},\"podAntiAffinity\":{" REQ b "]}}"
#define PREF_AFF(t) "{\"podAffinity\":{" PREF t "]}}"
#define PREF_ANTI(t) "{\"podAntiAffinity\":{" PREF t "]}}"
#define PREF_BOTH(a, b) "{\"podAffinity\":{" PREF a "]},\"podAntiAffinity\":{" PREF b "]}}"
#define TERM(key, sel) "{\"topologyKey\":\"" key "\",\"labelSelector\":" sel "}"
#define TERM_X(key, sel, extra) "{\"topologyKey\":\"" key "\",\"labelSelector\":" sel extra "}"
#define WTERM(w, term) "{\"weight\":" #w ",\"podAffinityTerm\":" term "}"
#define SEL_IN(k, v) \
    "{\"matchExpressions\":[{\"key\":\"" k "\",\"operator\":\"In\",\"values\":[" v "]}]}"
#define SEL_EQ(k, v) "{\"matchLabels\":{\"" k "\":\"" v "\"}}"
#define SCAN SEL_IN("service", "\"securityscan\", \"value2\"")

#define NODE_A "node-a region=r1 zone=z1 hostname=node-a"
#define NODE_B "node-b region=r1 zone=z2 hostname=node-b"
#define NODE_X "node-x region=r2 zone=z3 hostname=node-x"
#define NODES3 {NODE_A, NODE_B, NODE_X}

#define MAX_NODES 4
#define MAX_PODS 8
#define NO_SCORE -1

struct affinity_case {
    const char *name;
    const char *terms;              /* the incoming pod's constraint JSON, NULL: none */
    const char *pod;                /* "ns label=value ..." */
    const char *nodes[MAX_NODES];   /* "name key=value ..." */
    const char *existing[MAX_PODS]; /* "node ns label=value ... [| constraint JSON]" */
    const char *filter;             /* per node: ok, aff, anti, exist; NULL: PreFilter skips */
    int scores[MAX_NODES];          /* normalized; NO_SCORE in [0]: PreScore skips */
    const char *args;               /* plugin args, NULL: {} */
};

/* args is given only by the cases that need it; the rest leave it NULL */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const struct affinity_case cases[] = {
    /* Filter: the pod's required affinity (kube's TestRequiredAffinitySingleNode) */
    {"no terms, no existing pods: PreFilter skips", NULL, "ns", NODES3, {NULL}, NULL,
     {NO_SCORE}},
    {"affinity In matches the existing pod", REQ_AFF(TERM("region", SCAN)), "ns", NODES3,
     {"node-a ns service=securityscan"}, "ok ok aff", {NO_SCORE}},
    {"affinity In: only the region of the matching pod",
     REQ_AFF(TERM("region", SEL_IN("service", "\"x\""))), "ns", NODES3,
     {"node-x ns service=x"}, "aff aff ok", {NO_SCORE}},
    {"affinity NotIn operator",
     REQ_AFF(TERM("region", "{\"matchExpressions\":[{\"key\":\"service\",\"operator\":\"NotIn\","
                            "\"values\":[\"securityscan3\",\"value3\"]}]}")),
     "ns", NODES3, {"node-a ns service=securityscan"}, "ok ok aff", {NO_SCORE}},
    {"affinity does not match a pod in another namespace",
     REQ_AFF(TERM_X("region", SCAN, ",\"namespaces\":[\"DiffNameSpace\"]")),
     "ns service=securityscan", NODES3, {"node-a ns service=securityscan"}, "aff aff aff",
     {NO_SCORE}},
    {"affinity selector does not match the existing pod",
     REQ_AFF(TERM("region", SEL_IN("service", "\"antivirusscan\", \"value2\""))),
     "ns service=securityscan", NODES3, {"node-a ns service=securityscan"}, "aff aff aff",
     {NO_SCORE}},
    {"affinity with matchExpressions ANDed, all hold",
     REQ_AFF(TERM("region", "{\"matchExpressions\":[{\"key\":\"service\",\"operator\":\"Exists\"},"
                            "{\"key\":\"wrongkey\",\"operator\":\"DoesNotExist\"}]}")),
     "ns", NODES3, {"node-a ns service=securityscan"}, "ok ok aff", {NO_SCORE}},
    {"affinity with matchExpressions ANDed, one fails",
     REQ_AFF(TERM("region", "{\"matchExpressions\":[{\"key\":\"service\",\"operator\":\"Exists\"},"
                            "{\"key\":\"service\",\"operator\":\"In\",\"values\":[\"x\"]}]}")),
     "ns", NODES3, {"node-a ns service=securityscan"}, "aff aff aff", {NO_SCORE}},
    {"affinity terms are ANDed: a pod matching one term only does not count",
     REQ_AFF(TERM("region", SCAN) "," TERM("zone", SEL_EQ("tier", "db"))), "ns", NODES3,
     {"node-a ns service=securityscan"}, "aff aff aff", {NO_SCORE}},
    {"affinity terms are ANDed: a pod matching both counts in both domains",
     REQ_AFF(TERM("region", SCAN) "," TERM("zone", SEL_EQ("tier", "db"))), "ns", NODES3,
     {"node-a ns service=securityscan tier=db"}, "ok aff aff", {NO_SCORE}},
    {"affinity: a node without the topology key is unresolvable",
     REQ_AFF(TERM("rack", SCAN)), "ns", {"node-a region=r1 rack=k1", "node-b region=r1"},
     {"node-a ns service=securityscan"}, "ok aff", {NO_SCORE}},
    {"affinity to itself: the first pod of the set goes anywhere with the key",
     REQ_AFF(TERM("zone", SEL_EQ("app", "db"))), "ns app=db",
     {NODE_A, NODE_B, "node-c region=r9"}, {NULL}, "ok ok aff", {NO_SCORE}},
    {"affinity to itself: once one runs, the others follow it",
     REQ_AFF(TERM("zone", SEL_EQ("app", "db"))), "ns app=db", NODES3, {"node-b ns app=db"},
     "aff ok aff", {NO_SCORE}},
    {"affinity with an absent labelSelector matches no pod",
     REQ_AFF("{\"topologyKey\":\"zone\"}"), "ns app=db", NODES3, {"node-b ns app=db"},
     "aff aff aff", {NO_SCORE}},
    {"affinity: pods on a node outside the snapshot do not count",
     REQ_AFF(TERM("region", SCAN)), "ns", NODES3, {"node-gone ns service=securityscan"},
     "aff aff aff", {NO_SCORE}},
    /* Filter: the pod's required anti-affinity */
    {"affinity and anti-affinity both satisfied",
     REQ_BOTH(TERM("region", SCAN), TERM("zone", SEL_EQ("service", "antivirusscan"))), "ns",
     NODES3, {"node-a ns service=securityscan"}, "ok ok aff", {NO_SCORE}},
    {"affinity satisfied, anti-affinity not",
     REQ_BOTH(TERM("region", SCAN), TERM("zone", SCAN)), "ns", NODES3,
     {"node-a ns service=securityscan"}, "anti ok aff", {NO_SCORE}},
    {"anti-affinity one per node (hostname)", REQ_ANTI(TERM("hostname", SEL_EQ("app", "web"))),
     "ns app=web", NODES3, {"node-a ns app=web"}, "anti ok ok", {NO_SCORE}},
    {"anti-affinity over a region", REQ_ANTI(TERM("region", SEL_EQ("app", "web"))), "ns app=web",
     NODES3, {"node-a ns app=web"}, "anti anti ok", {NO_SCORE}},
    {"anti-affinity: a node without the key passes",
     REQ_ANTI(TERM("rack", SEL_EQ("app", "web"))), "ns app=web",
     {"node-a region=r1 rack=k1", "node-b region=r1"}, {"node-a ns app=web"}, "anti ok",
     {NO_SCORE}},
    {"anti-affinity ignores pods of other namespaces by default",
     REQ_ANTI(TERM("hostname", SEL_EQ("app", "web"))), "ns app=web", NODES3,
     {"node-a other app=web"}, "ok ok ok", {NO_SCORE}},
    {"anti-affinity with namespaceSelector {} selects every namespace",
     REQ_ANTI(TERM_X("hostname", SEL_EQ("app", "web"), ",\"namespaceSelector\":{}")),
     "ns app=web", NODES3, {"node-a other app=web"}, "anti ok ok", {NO_SCORE}},
    {"anti-affinity with namespaceSelector on Namespace labels (team=a on ns1)",
     REQ_ANTI(TERM_X("hostname", SEL_EQ("app", "web"),
                     ",\"namespaceSelector\":{\"matchLabels\":{\"team\":\"a\"}}")),
     "ns app=web", NODES3, {"node-a ns1 app=web", "node-b ns2 app=web"}, "anti ok ok",
     {NO_SCORE}},
    {"anti-affinity with namespaces and namespaceSelector united",
     REQ_ANTI(TERM_X("hostname", SEL_EQ("app", "web"),
                     ",\"namespaces\":[\"ns2\"],\"namespaceSelector\":{\"matchLabels\":"
                     "{\"team\":\"a\"}}")),
     "ns app=web", NODES3, {"node-a ns1 app=web", "node-b ns2 app=web", "node-x ns app=web"},
     "anti anti ok", {NO_SCORE}},
    {"anti-affinity matchLabelKeys: another version does not repel",
     REQ_ANTI(TERM_X("hostname", SEL_EQ("app", "web"), ",\"matchLabelKeys\":[\"version\"]")),
     "ns app=web version=2", NODES3, {"node-a ns app=web version=1", "node-b ns app=web version=2"},
     "ok anti ok", {NO_SCORE}},
    {"anti-affinity mismatchLabelKeys: only other tenants repel",
     REQ_ANTI(TERM_X("hostname",
                     "{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"Exists\"}]}",
                     ",\"mismatchLabelKeys\":[\"tenant\"]")),
     "ns app=web tenant=t2", NODES3, {"node-a ns app=db tenant=t1", "node-b ns app=db tenant=t2"},
     "anti ok ok", {NO_SCORE}},
    /* Filter: placed pods' required anti-affinity against the pod */
    {"existing pod's anti-affinity does not select the pod",
     REQ_AFF(TERM("region", SCAN)), "ns service=securityscan", NODES3,
     {"node-a ns service=securityscan | "
      REQ_ANTI(TERM("zone", SEL_EQ("service", "antivirusscan")))},
     "ok ok aff", {NO_SCORE}},
    {"existing pod's anti-affinity selects the pod",
     REQ_AFF(TERM("region", SCAN)), "ns service=securityscan", NODES3,
     {"node-a ns service=securityscan | " REQ_ANTI(TERM("zone", SCAN))}, "exist ok aff",
     {NO_SCORE}},
    {"existing pod's anti-affinity applies to a pod without terms",
     NULL, "ns app=web", NODES3,
     {"node-b ns app=db | " REQ_ANTI(TERM("region", SEL_EQ("app", "web")))},
     "exist exist ok", {NO_SCORE}},
    {"existing pod's anti-affinity: the pod in another namespace passes",
     NULL, "other app=web", NODES3,
     {"node-b ns app=db | " REQ_ANTI(TERM("region", SEL_EQ("app", "web")))}, "ok ok ok",
     {NO_SCORE}},
    {"existing pod's anti-affinity names the pod's namespace",
     NULL, "other app=web", NODES3,
     {"node-b ns app=db | " REQ_ANTI(TERM_X("region", SEL_EQ("app", "web"),
                                            ",\"namespaces\":[\"other\"]"))},
     "exist exist ok", {NO_SCORE}},
    {"existing pod's anti-affinity on a key the node lacks",
     NULL, "ns app=web", {"node-a region=r1 rack=k1", "node-b region=r1"},
     {"node-a ns app=db | " REQ_ANTI(TERM("rack", SEL_EQ("app", "web")))}, "exist ok",
     {NO_SCORE}},
    {"the pod's anti-affinity is checked before the placed pods'",
     REQ_ANTI(TERM("zone", SEL_EQ("app", "db"))), "ns app=web", NODES3,
     {"node-a ns app=db | " REQ_ANTI(TERM("region", SEL_EQ("app", "web")))}, "anti exist ok",
     {NO_SCORE}},
    /* Score (kube's TestPreferredAffinity) */
    {"score: preferred affinity over a region", PREF_AFF(WTERM(5, TERM("region", SCAN))), "ns",
     NODES3, {"node-a ns service=securityscan"}, NULL, {100, 100, 0}},
    {"score: preferred anti-affinity over a zone", PREF_ANTI(WTERM(5, TERM("zone", SCAN))), "ns",
     NODES3, {"node-a ns service=securityscan"}, NULL, {0, 100, 100}},
    {"score: affinity and anti-affinity add up",
     PREF_BOTH(WTERM(8, TERM("region", SCAN)), WTERM(5, TERM("zone", SEL_EQ("app", "db")))),
     "ns", NODES3, {"node-a ns service=securityscan", "node-b ns app=db"}, NULL,
     {100, 37, 0}},
    {"score: a placed pod's required affinity selecting the pod (hardPodAffinityWeight 1)",
     NULL, "ns app=web", NODES3,
     {"node-x ns app=cache | " REQ_AFF(TERM("region", SEL_EQ("app", "web")))}, NULL,
     {0, 0, 100}},
    {"score: hardPodAffinityWeight 0 ignores placed pods' required affinity", NULL, "ns app=web",
     NODES3, {"node-x ns app=cache | " REQ_AFF(TERM("region", SEL_EQ("app", "web")))},
     NULL, {0, 0, 0}, "{\"hardPodAffinityWeight\":0}"},
    {"score: a placed pod's preferred anti-affinity repels the pod", NULL, "ns app=web", NODES3,
     {"node-a ns app=cache | " PREF_ANTI(WTERM(10, TERM("zone", SEL_EQ("app", "web"))))},
     NULL, {0, 100, 100}},
    {"score: ignorePreferredTermsOfExistingPods", NULL, "ns app=web", NODES3,
     {"node-a ns app=cache | " PREF_ANTI(WTERM(10, TERM("zone", SEL_EQ("app", "web"))))},
     NULL, {0, 0, 0}, "{\"ignorePreferredTermsOfExistingPods\":true}"},
    {"score: a placed pod's preferred affinity attracts the pod", NULL, "ns app=web", NODES3,
     {"node-b ns app=cache | " PREF_AFF(WTERM(7, TERM("hostname", SEL_EQ("app", "web"))))},
     NULL, {0, 100, 0}},
    {"score: service next to its cache",
     PREF_AFF(WTERM(100, TERM("hostname", SEL_EQ("app", "cache")))),
     "ns app=web", NODES3, {"node-x ns app=cache"}, NULL, {0, 0, 100}},
};

#pragma GCC diagnostic pop

#endif

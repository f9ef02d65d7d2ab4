/* kube-scheduler's PodTopologySpread filtering and scoring cases (nodes node-a, node-b in zone1
 * and node-x, node-y in zone2, topology keys "zone" and "node") in a small notation both tests
 * of the plugin read: test_podtopologyspread_harness.c runs them on the harness,
 * test_podtopologyspread.c builds its index-life fixtures with the same notation. */
#ifndef KC_PLUGINS_SPREAD_CASES_H
#define KC_PLUGINS_SPREAD_CASES_H

#define REASON_SKEW "node(s) didn't match pod topology spread constraints"
#define REASON_LABEL "node(s) didn't match pod topology spread constraints (missing required label)"

/* Constraint JSON builders */
#define SEL_FOO "{\"matchExpressions\":[{\"key\":\"foo\",\"operator\":\"Exists\"}]}"
#define SEL_BAR "{\"matchExpressions\":[{\"key\":\"bar\",\"operator\":\"Exists\"}]}"
#define TSC(skew, key, when, sel, extra) \
    "{\"maxSkew\":" #skew ",\"topologyKey\":\"" key "\",\"whenUnsatisfiable\":\"" when \
    "\",\"labelSelector\":" sel extra "}"
#define HARD(skew, key, sel) TSC(skew, key, "DoNotSchedule", sel, "")
#define SOFT(skew, key, sel) TSC(skew, key, "ScheduleAnyway", sel, "")
#define LIST1(a) "{\"topologySpreadConstraints\":[" a "]}"
#define LIST2(a, b) "{\"topologySpreadConstraints\":[" a "," b "]}"

/* The four nodes of kube's tests, and a fifth without the zone label. */
#define NODE_A "node-a zone=zone1 node=node-a"
#define NODE_B "node-b zone=zone1 node=node-b"
#define NODE_X "node-x zone=zone2 node=node-x"
#define NODE_Y "node-y zone=zone2 node=node-y"
#define NODES4 {NODE_A, NODE_B, NODE_X, NODE_Y}

#define MAX_NODES 6
#define MAX_PODS 16
#define NO_SCORE -1

struct spread_case {
    const char *name;
    const char *constraints;
    const char *pod;                 /* "ns label=value ... sel:key=value tol:key" */
    const char *nodes[MAX_NODES];    /* "name key=value ... taint:key" */
    const char *existing[MAX_PODS];  /* "node ns label=value ..." */
    const char *filter;              /* "ok skew label ..." per node; NULL: PreFilter skips */
    int scores[MAX_NODES];           /* normalized; NO_SCORE in [0]: not scored */
};

static const struct spread_case cases[] = {
    /* Filter: one constraint (kube's TestSingleConstraint) */
    {"no existing pods", LIST1(HARD(1, "zone", SEL_FOO)), "ns foo=", NODES4, {NULL},
     "ok ok ok ok", {NO_SCORE}},
    {"no existing pods, incoming pod doesn't match itself", LIST1(HARD(1, "zone", SEL_FOO)),
     "ns bar=", NODES4, {NULL}, "ok ok ok ok", {NO_SCORE}},
    {"existing pods in a different namespace do not count", LIST1(HARD(1, "zone", SEL_FOO)),
     "ns foo=", NODES4, {"node-a other foo=", "node-b other foo=", "node-a other foo="},
     "ok ok ok ok", {NO_SCORE}},
    {"pods spread across zones as 3/3, all nodes fit", LIST1(HARD(1, "zone", SEL_FOO)),
     "ns foo=", NODES4,
     {"node-a ns foo=", "node-a ns foo=", "node-b ns foo=", "node-x ns foo=", "node-y ns foo=",
      "node-y ns foo="},
     "ok ok ok ok", {NO_SCORE}},
    {"pods spread across zones as 2/1, zone1 is too full", LIST1(HARD(1, "zone", SEL_FOO)),
     "ns foo=", NODES4, {"node-a ns foo=", "node-b ns foo=", "node-x ns foo="},
     "skew skew ok ok", {NO_SCORE}},
    {"pods spread across zones as 3/1 with maxSkew 2", LIST1(HARD(2, "zone", SEL_FOO)),
     "ns foo=", NODES4, {"node-a ns foo=", "node-a ns foo=", "node-b ns foo=", "node-x ns foo="},
     "skew skew ok ok", {NO_SCORE}},
    {"pods spread across zones as 2/1 with maxSkew 2, all fit", LIST1(HARD(2, "zone", SEL_FOO)),
     "ns foo=", NODES4, {"node-a ns foo=", "node-b ns foo=", "node-x ns foo="}, "ok ok ok ok",
     {NO_SCORE}},
    {"incoming pod doesn't match itself, 2/1 fits everywhere", LIST1(HARD(1, "zone", SEL_FOO)),
     "ns bar=", NODES4, {"node-a ns foo=", "node-b ns foo=", "node-x ns foo="}, "ok ok ok ok",
     {NO_SCORE}},
    {"pods not matching the selector do not count", LIST1(HARD(1, "zone", SEL_FOO)), "ns foo=",
     NODES4, {"node-a ns bar=", "node-a ns bar=", "node-b ns bar="}, "ok ok ok ok", {NO_SCORE}},
    {"spread on node: 1/1/0/0 allows only the empty nodes", LIST1(HARD(1, "node", SEL_FOO)),
     "ns foo=", NODES4, {"node-a ns foo=", "node-b ns foo="}, "skew skew ok ok", {NO_SCORE}},
    {"spread on node: 1/1/1/1 allows all", LIST1(HARD(1, "node", SEL_FOO)), "ns foo=", NODES4,
     {"node-a ns foo=", "node-b ns foo=", "node-x ns foo=", "node-y ns foo="}, "ok ok ok ok",
     {NO_SCORE}},
    {"node missing the topology key is unresolvable", LIST1(HARD(1, "zone", SEL_FOO)), "ns foo=",
     {"node-a node=node-a", NODE_B, NODE_X, NODE_Y}, {NULL}, "label ok ok ok", {NO_SCORE}},
    {"pods on a node without the key are not counted", LIST1(HARD(1, "zone", SEL_FOO)),
     "ns foo=", {NODE_A, NODE_X, "node-c node=node-c"},
     {"node-c ns foo=", "node-c ns foo=", "node-c ns foo=", "node-a ns foo="},
     "skew ok label", {NO_SCORE}},
    {"a domain whose nodes all lack a second key is not eligible",
     LIST2(HARD(1, "zone", SEL_FOO), HARD(5, "rack", SEL_FOO)), "ns foo=",
     {"node-a zone=zone1 rack=r1", "node-x zone=zone2"}, {"node-a ns foo="}, "ok label",
     {NO_SCORE}},
    /* Filter: two constraints (kube's TestMultipleConstraints) */
    {"two constraints on zone and node, spreads = [3/3, 2/1/0/3]",
     LIST2(HARD(1, "zone", SEL_FOO), HARD(1, "node", SEL_FOO)), "ns foo=", NODES4,
     {"node-a ns foo=", "node-a ns foo=", "node-b ns foo=", "node-y ns foo=", "node-y ns foo=",
      "node-y ns foo="},
     "skew skew ok skew", {NO_SCORE}},
    {"two constraints on zone and node, spreads = [3/4, 2/1/0/4]",
     LIST2(HARD(1, "zone", SEL_FOO), HARD(1, "node", SEL_FOO)), "ns foo=", NODES4,
     {"node-a ns foo=", "node-a ns foo=", "node-b ns foo=", "node-y ns foo=", "node-y ns foo=",
      "node-y ns foo=", "node-y ns foo="},
     "skew skew skew skew", {NO_SCORE}},
    {"constraints hold different selectors, spreads = [1/0, 1/0/0/1]",
     LIST2(HARD(1, "zone", SEL_FOO), HARD(1, "node", SEL_BAR)), "ns foo= bar=", NODES4,
     {"node-a ns foo=", "node-y ns bar="}, "skew skew ok skew", {NO_SCORE}},
    {"constraints hold different selectors, pod matches only the first",
     LIST2(HARD(1, "zone", SEL_FOO), HARD(1, "node", SEL_BAR)), "ns foo=", NODES4,
     {"node-a ns foo=", "node-y ns bar="}, "skew skew ok ok", {NO_SCORE}},
    /* Filter: node inclusion policies */
    {"nodeAffinityPolicy Honor (default): nodes the pod cannot use do not count",
     LIST1(HARD(1, "zone", SEL_FOO)), "ns foo= sel:zone=zone1", NODES4, {"node-a ns foo="},
     "ok ok ok ok", {NO_SCORE}},
    {"nodeAffinityPolicy Ignore: every node counts",
     LIST1(TSC(1, "zone", "DoNotSchedule", SEL_FOO, ",\"nodeAffinityPolicy\":\"Ignore\"")),
     "ns foo= sel:zone=zone1", NODES4, {"node-a ns foo="}, "skew skew ok ok", {NO_SCORE}},
    {"nodeTaintsPolicy Ignore (default): tainted nodes count",
     LIST1(HARD(1, "zone", SEL_FOO)), "ns foo=",
     {NODE_A, NODE_B, "node-x zone=zone2 taint:dedicated", "node-y zone=zone2 taint:dedicated"},
     {"node-a ns foo="}, "skew skew ok ok", {NO_SCORE}},
    {"nodeTaintsPolicy Honor: untolerated tainted nodes do not count",
     LIST1(TSC(1, "zone", "DoNotSchedule", SEL_FOO, ",\"nodeTaintsPolicy\":\"Honor\"")),
     "ns foo=",
     {NODE_A, NODE_B, "node-x zone=zone2 taint:dedicated", "node-y zone=zone2 taint:dedicated"},
     {"node-a ns foo="}, "ok ok ok ok", {NO_SCORE}},
    {"nodeTaintsPolicy Honor: tolerated taints still count",
     LIST1(TSC(1, "zone", "DoNotSchedule", SEL_FOO, ",\"nodeTaintsPolicy\":\"Honor\"")),
     "ns foo= tol:dedicated",
     {NODE_A, NODE_B, "node-x zone=zone2 taint:dedicated", "node-y zone=zone2 taint:dedicated"},
     {"node-a ns foo="}, "skew skew ok ok", {NO_SCORE}},
    /* Filter: minDomains */
    {"minDomains above the domain count makes the global minimum 0",
     LIST1(TSC(1, "zone", "DoNotSchedule", SEL_FOO, ",\"minDomains\":3")), "ns foo=", NODES4,
     {"node-a ns foo=", "node-x ns foo="}, "skew skew skew skew", {NO_SCORE}},
    {"minDomains equal to the domain count keeps the real minimum",
     LIST1(TSC(1, "zone", "DoNotSchedule", SEL_FOO, ",\"minDomains\":2")), "ns foo=", NODES4,
     {"node-a ns foo=", "node-x ns foo="}, "ok ok ok ok", {NO_SCORE}},
    {"minDomains 5 on nodes with maxSkew 2: an empty node takes up to 2",
     LIST1(TSC(2, "node", "DoNotSchedule", SEL_FOO, ",\"minDomains\":5")), "ns foo=", NODES4,
     {"node-a ns foo=", "node-a ns foo=", "node-b ns foo="}, "skew ok ok ok", {NO_SCORE}},
    /* Filter: selectors and matchLabelKeys */
    {"matchLabelKeys: pods of another revision do not count",
     LIST1(TSC(1, "zone", "DoNotSchedule", SEL_FOO, ",\"matchLabelKeys\":[\"rev\"]")),
     "ns foo= rev=2", NODES4, {"node-a ns foo= rev=1", "node-b ns foo= rev=1"}, "ok ok ok ok",
     {NO_SCORE}},
    {"matchLabelKeys: pods of the same revision count",
     LIST1(TSC(1, "zone", "DoNotSchedule", SEL_FOO, ",\"matchLabelKeys\":[\"rev\"]")),
     "ns foo= rev=2", NODES4, {"node-a ns foo= rev=2", "node-b ns foo= rev=1"},
     "skew skew ok ok", {NO_SCORE}},
    {"matchLabelKeys the pod lacks are ignored",
     LIST1(TSC(1, "zone", "DoNotSchedule", SEL_FOO, ",\"matchLabelKeys\":[\"rev\"]")),
     "ns foo=", NODES4, {"node-a ns foo= rev=1", "node-b ns foo= rev=1"}, "skew skew ok ok",
     {NO_SCORE}},
    {"absent labelSelector matches no pod",
     "{\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":\"zone\","
     "\"whenUnsatisfiable\":\"DoNotSchedule\"}]}",
     "ns foo=", NODES4, {"node-a ns foo=", "node-b ns foo="}, "ok ok ok ok", {NO_SCORE}},
    {"empty labelSelector matches every pod of the namespace", LIST1(HARD(1, "zone", "{}")),
     "ns", NODES4, {"node-a ns", "node-b ns x=1"}, "skew skew ok ok", {NO_SCORE}},
    {"matchLabels compare values",
     LIST1(HARD(1, "zone", "{\"matchLabels\":{\"app\":\"web\"}}")), "ns app=web", NODES4,
     {"node-a ns app=db", "node-b ns app=db", "node-x ns app=web"}, "ok ok skew skew",
     {NO_SCORE}},
    {"NotIn counts pods without the label or with another value",
     LIST1(HARD(1, "zone",
                "{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"NotIn\",\"values\":["
                "\"db\"]}]}")),
     "ns app=web", NODES4, {"node-a ns app=db", "node-b ns", "node-x ns app=web", "node-y ns"},
     "ok ok skew skew", {NO_SCORE}},
    {"DoesNotExist counts pods without the label",
     LIST1(HARD(1, "zone",
                "{\"matchExpressions\":[{\"key\":\"canary\",\"operator\":\"DoesNotExist\"}]}")),
     "ns", NODES4, {"node-a ns", "node-b ns canary=1", "node-x ns canary=1"}, "skew skew ok ok",
     {NO_SCORE}},
    {"ScheduleAnyway only: PreFilter skips, every node passes", LIST1(SOFT(1, "zone", SEL_FOO)),
     "ns foo=", NODES4, {"node-a ns foo=", "node-a ns foo=", "node-a ns foo="}, NULL,
     {NO_SCORE}},
    /* Score (kube's TestPodTopologySpreadScore) */
    {"score: one constraint on node, no existing pods", LIST1(SOFT(1, "node", SEL_FOO)),
     "ns foo=", {NODE_A, NODE_B}, {NULL}, NULL, {100, 100}},
    {"score: one constraint on node, all 4 nodes are candidates",
     LIST1(SOFT(1, "node", SEL_FOO)), "ns foo=", NODES4,
     {"node-a ns foo=", "node-a ns foo=", "node-b ns foo=", "node-y ns foo=", "node-y ns foo=",
      "node-y ns foo="},
     NULL, {20, 60, 100, 0}},
    {"score: one constraint on zone, 2/1", LIST1(SOFT(1, "zone", SEL_FOO)), "ns foo=", NODES4,
     {"node-a ns foo=", "node-b ns foo=", "node-x ns foo="}, NULL, {33, 33, 100, 100}},
    {"score: maxSkew 3 waters down the difference", LIST1(SOFT(3, "zone", SEL_FOO)), "ns foo=",
     NODES4, {"node-a ns foo=", "node-b ns foo=", "node-x ns foo="}, NULL, {60, 60, 100, 100}},
    {"score: node without the key is ignored and scores 0", LIST1(SOFT(1, "zone", SEL_FOO)),
     "ns foo=", {NODE_A, NODE_X, "node-c node=node-c"},
     {"node-a ns foo=", "node-c ns foo=", "node-c ns foo="}, NULL, {0, 100, 0}},
    {"score: two constraints on zone and node",
     LIST2(SOFT(1, "zone", SEL_FOO), SOFT(1, "node", SEL_FOO)), "ns foo=", NODES4,
     {"node-a ns foo=", "node-a ns foo=", "node-b ns foo=", "node-x ns foo="}, NULL,
     {12, 37, 75, 100}},
};

#endif

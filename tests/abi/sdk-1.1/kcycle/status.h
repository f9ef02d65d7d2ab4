/* Phase status codes returned by plugin callbacks (kube-scheduler's framework statuses). */
#ifndef KCYCLE_STATUS_H
#define KCYCLE_STATUS_H

typedef enum kc_status {
    KC_SUCCESS = 0,       /* the phase passed */
    KC_UNSCHEDULABLE = 1, /* the pod does not fit here; preemption may help */
    KC_UNRESOLVABLE = 2,  /* the pod does not fit here and preemption cannot help */
    KC_WAIT = 3,          /* Permit only: hold the pod until allowed, rejected or timed out */
    KC_SKIP = 4,          /* the plugin has nothing to do for this pod (PreFilter, PreScore, Bind) */
    KC_ERROR = 5          /* an internal error: the pod goes to backoff and is retried */
} kc_status;

#define KC_STATUS_MAX KC_ERROR

#endif

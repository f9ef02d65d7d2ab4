/* Score helpers that need no host call: kube-scheduler's default normalization. */
#ifndef KCYCLE_SCORE_H
#define KCYCLE_SCORE_H

#include <stdint.h>

/* The highest score a plugin gives a node after NormalizeScore (kube's MaxNodeScore). */
#define KC_MAX_NODE_SCORE 100

/* kube-scheduler's DefaultNormalizeScore: scores[i] = 100 * scores[i] / max (integer
 * division), then 100 - that when reverse is nonzero. When every score is 0 they stay 0, or
 * all become 100 when reverse. Meant for NormalizeScore over raw counts or weights >= 0. */
static inline void kc_normalize_scores(int64_t *scores, uint32_t count, int reverse)
{
    int64_t max = 0;
    for (uint32_t i = 0; i < count; i++)
        if (scores[i] > max)
            max = scores[i];
    for (uint32_t i = 0; i < count; i++) {
        int64_t score = max > 0 ? KC_MAX_NODE_SCORE * scores[i] / max : 0;
        scores[i] = reverse ? KC_MAX_NODE_SCORE - score : score;
    }
}

#endif

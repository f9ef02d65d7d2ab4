/* MIG profiles and their placement rules, as NVIDIA's MIG user guide tables them: a card has
 * eight memory slices (four on A30), each profile takes a fixed number of them and may only
 * start at certain slices. The ledger keeps the used slices of a card as a bit mask. */
#include <ctype.h>
#include <string.h>

#include "gpushare.h"

/* starts: bit i set when an instance may start at slice i. A100 80GB and H100 80GB share
 * their profiles. */
/* one profile a line, as NVIDIA's table reads */
/* clang-format off */
#define PROFILES_80GB                     \
    {{"1g.10gb", 1, 1, 0x7f, 10240},      \
     {"1g.20gb", 1, 2, 0x55, 20480},      \
     {"2g.20gb", 2, 2, 0x15, 20480},      \
     {"3g.40gb", 3, 4, 0x11, 40960},      \
     {"4g.40gb", 4, 4, 0x01, 40960},      \
     {"7g.80gb", 7, 8, 0x01, 81920}}

static const struct mig_family families[] = {
    {"A100-40GB", 40960, 8, 6,
     {{"1g.5gb", 1, 1, 0x7f, 5120},
      {"1g.10gb", 1, 2, 0x55, 10240},
      {"2g.10gb", 2, 2, 0x15, 10240},
      {"3g.20gb", 3, 4, 0x11, 20480},
      {"4g.20gb", 4, 4, 0x01, 20480},
      {"7g.40gb", 7, 8, 0x01, 40960}}},
    {"A100-80GB", 81920, 8, 6, PROFILES_80GB},
    {"H100-80GB", 81920, 8, 6, PROFILES_80GB},
    {"H100-94GB", 96256, 8, 6,
     {{"1g.12gb", 1, 1, 0x7f, 12288},
      {"1g.24gb", 1, 2, 0x55, 24576},
      {"2g.24gb", 2, 2, 0x15, 24576},
      {"3g.47gb", 3, 4, 0x11, 48128},
      {"4g.47gb", 4, 4, 0x01, 48128},
      {"7g.94gb", 7, 8, 0x01, 96256}}},
    {"H200-141GB", 144384, 8, 6,
     {{"1g.18gb", 1, 1, 0x7f, 18432},
      {"1g.35gb", 1, 2, 0x55, 35840},
      {"2g.35gb", 2, 2, 0x15, 35840},
      {"3g.71gb", 3, 4, 0x11, 72704},
      {"4g.71gb", 4, 4, 0x01, 72704},
      {"7g.141gb", 7, 8, 0x01, 144384}}},
    {"A30-24GB", 24576, 4, 3,
     {{"1g.6gb", 1, 1, 0x0f, 6144},
      {"2g.12gb", 2, 2, 0x05, 12288},
      {"4g.24gb", 4, 4, 0x01, 24576}}},
};
/* clang-format on */

#define FAMILY_COUNT (sizeof(families) / sizeof(families[0]))

const struct mig_family *mig_family_find(const char *name)
{
    for (size_t i = 0; i < FAMILY_COUNT; i++) {
        if (strcmp(families[i].name, name) == 0)
            return &families[i];
    }
    return NULL;
}

/* Card memory as drivers report it is a little under the marketing size (A100 80GB shows
 * 81251 MiB), so the family is told apart by the model and a memory threshold. */
const struct mig_family *mig_family_for(const char *model, uint32_t memory_mib)
{
    const struct mig_family *named = mig_family_find(model);
    if (named != NULL)
        return named;
    if (text_contains_nocase(model, "A100", strlen("A100")))
        return mig_family_find(memory_mib > 60000 ? "A100-80GB" : "A100-40GB");
    if (text_contains_nocase(model, "H200", strlen("H200")))
        return mig_family_find("H200-141GB");
    if (text_contains_nocase(model, "H100", strlen("H100")))
        return mig_family_find(memory_mib > 90000 ? "H100-94GB" : "H100-80GB");
    if (text_contains_nocase(model, "A30", strlen("A30")))
        return mig_family_find("A30-24GB");
    return NULL;
}

const struct mig_profile *mig_profile_find(const struct mig_family *family, const char *name)
{
    if (family == NULL || name == NULL)
        return NULL;
    for (uint8_t i = 0; i < family->profile_count; i++) {
        if (strcmp(family->profiles[i].name, name) == 0)
            return &family->profiles[i];
    }
    return NULL;
}

uint8_t mig_mask(const struct mig_profile *profile, int start)
{
    return (uint8_t)(((1u << profile->slots) - 1u) << start);
}

static bool placeable(const struct mig_profile *profile, uint8_t mask, uint8_t slot_count,
                      int start)
{
    if ((profile->starts & (1u << start)) == 0 || start + profile->slots > slot_count)
        return false;
    return (mig_mask(profile, start) & mask) == 0;
}

/* The largest profile one more instance could take, as (memory, compute) so that 4g beats
 * 3g of the same memory. */
static uint32_t largest_key(const struct mig_family *family, uint8_t mask)
{
    uint32_t best = 0;
    for (uint8_t p = 0; p < family->profile_count; p++) {
        const struct mig_profile *profile = &family->profiles[p];
        for (int start = 0; start < family->slot_count; start++) {
            if (!placeable(profile, mask, family->slot_count, start))
                continue;
            uint32_t key = profile->memory_mib * 8u + profile->compute;
            if (key > best)
                best = key;
        }
    }
    return best;
}

uint32_t mig_largest_free(const struct mig_family *family, uint8_t mask)
{
    return largest_key(family, mask) / 8u;
}

int mig_place(const struct mig_family *family, const struct mig_profile *profile, uint8_t mask)
{
    int best_start = -1;
    uint32_t best_key = 0;
    /* from the top: at equal keys the later start wins, keeping slice 0 (where the large
     * profiles must start) free longest */
    for (int start = family->slot_count - 1; start >= 0; start--) {
        if (!placeable(profile, mask, family->slot_count, start))
            continue;
        uint32_t key = largest_key(family, (uint8_t)(mask | mig_mask(profile, start)));
        if (best_start < 0 || key > best_key) {
            best_start = start;
            best_key = key;
        }
    }
    return best_start;
}

bool mig_name_valid(const char *name)
{
    const char *p = name;
    if (!isdigit((unsigned char)*p))
        return false;
    while (isdigit((unsigned char)*p))
        p++;
    if (*p++ != 'g' || *p++ != '.' || !isdigit((unsigned char)*p))
        return false;
    while (isdigit((unsigned char)*p))
        p++;
    if (p[0] != 'g' || p[1] != 'b')
        return false;
    p += 2;
    return *p == '\0' || *p == '+';
}

/* The scheduling-relevant pod fields kcycle refuses rather than ignores: each field's name, the
 * shipped plugins that handle it, and which of them a configuration leaves unhandled. */
#ifndef KC_CORE_POD_FIELDS_H
#define KC_CORE_POD_FIELDS_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* Every pod_field bit the table knows. */
uint32_t pod_fields_all(void);
/* The field's name as a user writes it ("spec.topologySpreadConstraints"), NULL for an unknown
 * bit. Static storage. */
const char *pod_field_name(uint32_t bit);
/* The bit of a name, 0 when unknown. */
uint32_t pod_field_by_name(const char *name);
/* "nodeports", "volumebinding", ...: the shipped plugin that handles the bit, "" when none;
 * static storage. */
const char *pod_field_handlers(uint32_t bit);
/* The fields that no plugin named in names handles (by the table): every field except those. */
uint32_t pod_fields_unhandled_by(const char *const *names, uint32_t count);
/* Names of the fields in mask, ", "-separated, into buf (always terminated). */
void pod_fields_format(uint32_t mask, char *buf, size_t size);

#endif

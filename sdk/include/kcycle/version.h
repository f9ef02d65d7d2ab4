/* kcycle SDK version and ABI version: what a plugin was built against. */
#ifndef KCYCLE_VERSION_H
#define KCYCLE_VERSION_H

#define KC_VERSION_MAJOR 1
#define KC_VERSION_MINOR 2
#define KC_VERSION_PATCH 0
#define KC_VERSION_STRING "1.2.0"

/* ABI major changes only with a new SDK major; the minor grows when a table or struct grows.
 * Compatibility: plugin and host majors equal, host minor >= plugin minor (docs/ABI.md). */
#define KC_ABI_MAJOR 1
#define KC_ABI_MINOR 2
#define KC_ABI_MAKE(major, minor) (((unsigned)(major) << 16) | ((unsigned)(minor) & 0xffffu))
#define KC_ABI_VERSION KC_ABI_MAKE(KC_ABI_MAJOR, KC_ABI_MINOR)
#define KC_ABI_VERSION_MAJOR(v) ((unsigned)(v) >> 16)
#define KC_ABI_VERSION_MINOR(v) ((unsigned)(v) & 0xffffu)

#endif

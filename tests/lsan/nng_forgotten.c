/* Leaks on purpose: a message kcycle allocates with nng and forgets, and one it allocates and
 * appends to (nng grows the body inside libnng). Run under LeakSanitizer with the project's
 * suppressions, both must still be reported: the suppressions may hide nng's own in-flight
 * state, never a message of ours. Only built in sanitized builds (see meson.build). */
#include <stdio.h>
#include <string.h>

#include <nng/nng.h>

/* Kept out of line, so the report names this frame as the allocation's caller. */
__attribute__((noinline)) static void kcycle_forgets_a_message(void)
{
    nng_msg *msg = NULL;
    if (nng_msg_alloc(&msg, 64) != 0) {
        fprintf(stderr, "nng_msg_alloc failed\n");
        return;
    }
    memset(nng_msg_body(msg), 'k', 64);
    msg = NULL; /* forgotten: neither sent nor freed */
}

__attribute__((noinline)) static void kcycle_forgets_a_grown_message(void)
{
    nng_msg *msg = NULL;
    if (nng_msg_alloc(&msg, 0) != 0)
        return;
    static const char chunk[4096] = {'c'};
    for (int i = 0; i < 16; i++)
        nng_msg_append(msg, chunk, sizeof(chunk));
    msg = NULL;
}

int main(void)
{
    kcycle_forgets_a_message();
    kcycle_forgets_a_grown_message();
    return 0;
}

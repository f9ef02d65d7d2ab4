/* core/channel: whole messages over a SOCK_SEQPACKET socketpair, split into records and joined
 * again, with size caps, deadlines and the end of the peer told apart. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "channel.h"

struct pair {
    struct channel a, b;
};

static void pair_open(struct pair *p)
{
    int ends[2];
    assert_int_equal(channel_pair(ends), 0);
    channel_init(&p->a, ends[0]);
    channel_init(&p->b, ends[1]);
}

static void pair_close(struct pair *p)
{
    channel_close(&p->a);
    channel_close(&p->b);
}

static void test_a_small_message_arrives_whole(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p);
    const char text[] = "one request";
    assert_int_equal(channel_send(&p.a, text, sizeof(text), channel_now_ms() + 5000), 0);
    const uint8_t *data;
    size_t len;
    assert_int_equal(channel_recv(&p.b, 1024, channel_now_ms() + 5000, &data, &len), 0);
    assert_int_equal(len, sizeof(text));
    assert_memory_equal(data, text, sizeof(text));
    pair_close(&p);
}

/* A message of many records (a snapshot) needs a reader while it is written: a child reads it
 * and sends back its length and a checksum. */
static void test_a_message_of_many_records_is_joined_in_order(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p);
    size_t size = 5 * CHANNEL_RECORD_BYTES + 12345;
    uint8_t *big = malloc(size);
    uint64_t sum = 0;
    for (size_t i = 0; i < size; i++) {
        big[i] = (uint8_t)(i * 7 + i / 4096);
        sum += big[i] * (i % 251 + 1);
    }
    pid_t pid = fork();
    if (pid == 0) {
        const uint8_t *data;
        size_t len;
        uint64_t got[2] = {0, 0};
        if (channel_recv(&p.b, size, channel_now_ms() + 20000, &data, &len) == 0) {
            got[0] = len;
            for (size_t i = 0; i < len; i++)
                got[1] += data[i] * (i % 251 + 1);
        }
        channel_send(&p.b, got, sizeof(got), channel_now_ms() + 20000);
        free(big); /* the child's copy: valgrind checks the child's heap at its exit too */
        pair_close(&p);
        _exit(0);
    }
    assert_int_equal(channel_send(&p.a, big, size, channel_now_ms() + 20000), 0);
    const uint8_t *data;
    size_t len;
    assert_int_equal(channel_recv(&p.a, 64, channel_now_ms() + 20000, &data, &len), 0);
    uint64_t got[2];
    memcpy(got, data, sizeof(got));
    assert_int_equal(got[0], size);
    assert_true(got[1] == sum);
    free(big);
    pair_close(&p);
}

static void test_a_message_over_the_cap_is_refused_before_reading_it(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p);
    uint8_t bytes[100] = {0};
    assert_int_equal(channel_send(&p.a, bytes, sizeof(bytes), channel_now_ms() + 5000), 0);
    const uint8_t *data;
    size_t len;
    assert_int_equal(channel_recv(&p.b, 99, channel_now_ms() + 5000, &data, &len), -EMSGSIZE);
    pair_close(&p);
}

static void test_no_answer_is_a_timeout_and_a_closed_peer_is_the_end(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p);
    const uint8_t *data;
    size_t len;
    int64_t start = channel_now_ms();
    assert_int_equal(channel_recv(&p.b, 1024, start + 50, &data, &len), -ETIMEDOUT);
    assert_true(channel_now_ms() - start >= 50);
    channel_close(&p.a);
    assert_int_equal(channel_recv(&p.b, 1024, channel_now_ms() + 5000, &data, &len), -EPIPE);
    assert_int_equal(channel_send(&p.b, "x", 1, channel_now_ms() + 5000), -EPIPE);
    pair_close(&p);
}

static void test_records_without_the_header_are_a_protocol_error(void **state)
{
    (void)state;
    struct pair p;
    pair_open(&p);
    const char junk[] = "no header here";
    assert_int_equal(send(p.a.fd, junk, sizeof(junk), 0), (ssize_t)sizeof(junk));
    const uint8_t *data;
    size_t len;
    assert_int_equal(channel_recv(&p.b, 1024, channel_now_ms() + 5000, &data, &len), -EPROTO);
    pair_close(&p);
}

/* A thread allowed on one CPU does not spin while it waits (its peer may be pinned to the same
 * CPU and could not answer until the spin ran out); one allowed on two spins first. */
static void test_a_thread_pinned_to_one_cpu_does_not_spin(void **state)
{
    (void)state;
    cpu_set_t allowed, one;
    assert_int_equal(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
    int cpu = sched_getcpu();
    assert_true(cpu >= 0);
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    struct pair p;
    pair_open(&p);
    assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
    channel_affinity_changed();
    uint64_t before = channel_spins();
    assert_int_equal(channel_wait(&p.b, 1), 0); /* nothing comes: the timeout */
    assert_int_equal(channel_spins(), before);
    assert_int_equal(sched_setaffinity(0, sizeof(allowed), &allowed), 0);
    channel_affinity_changed();
    if (channel_spin_ns() > 0) { /* two usable cores or more */
        assert_int_equal(channel_wait(&p.b, 1), 0);
        assert_int_equal(channel_spins(), before + 1);
    } else {
        print_message("one usable core: no spin to compare with\n");
    }
    pair_close(&p);
}

/* A thread's own spin (channel_set_spin_us) replaces the process's for that thread only: 0
 * turns it off, a negative value gives the process's back. */
static void *wait_once(void *arg)
{
    channel_wait(arg, 1); /* this thread's spin: the process's */
    return NULL;
}

static void test_a_threads_own_spin_replaces_the_processs(void **state)
{
    (void)state;
    if (channel_spin_ns() == 0) {
        print_message("one usable core: no spin to compare with\n");
        return;
    }
    struct pair p;
    pair_open(&p);
    uint64_t before = channel_spins();
    channel_set_spin_us(0);
    assert_int_equal(channel_wait(&p.b, 1), 0);
    assert_int_equal(channel_spins(), before);
    /* another thread keeps the process's spin */
    pthread_t other;
    assert_int_equal(pthread_create(&other, NULL, wait_once, &p.b), 0);
    assert_int_equal(pthread_join(other, NULL), 0);
    assert_int_equal(channel_spins(), ++before);
    channel_set_spin_us(200);
    assert_int_equal(channel_wait(&p.b, 1), 0);
    assert_int_equal(channel_spins(), before + 1);
    channel_set_spin_us(-1);
    assert_int_equal(channel_wait(&p.b, 1), 0);
    assert_int_equal(channel_spins(), before + 2);
    pair_close(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_small_message_arrives_whole),
        cmocka_unit_test(test_a_message_of_many_records_is_joined_in_order),
        cmocka_unit_test(test_a_message_over_the_cap_is_refused_before_reading_it),
        cmocka_unit_test(test_no_answer_is_a_timeout_and_a_closed_peer_is_the_end),
        cmocka_unit_test(test_records_without_the_header_are_a_protocol_error),
        cmocka_unit_test(test_a_thread_pinned_to_one_cpu_does_not_spin),
        cmocka_unit_test(test_a_threads_own_spin_replaces_the_processs),
    };
    setenv("KCYCLE_CHANNEL_SPIN_US", "40", 1); /* the default, whatever the caller's */
    return cmocka_run_group_tests(tests, NULL, NULL);
}

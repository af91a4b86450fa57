/* test_scratch.c - the request scratch arrays (daemon/exec/request.c) when an
 * allocation fails part way through growing them: linked with the fuzz
 * targets' allocator wrapper (tests/fuzz/alloc.c) to make the n-th
 * allocation fail. */
#include <check.h>
#include <malloc.h>
#include <stdint.h>

#include "daemon/exec/request.h"
#include "tests/fuzz/fuzz.h"
#include "tests/testutil.h"

/* Whichever array fails to grow, the scratch does not claim the new size:
 * a later request of that size grows all of them again.  (It used to set
 * nxs after a failed ys or outcomes, and a later batch wrote past ys.) */
START_TEST(scratch_that_fails_to_grow_is_not_counted_as_grown)
{
    for (unsigned long fail = 1; fail <= 5; fail++) {
        pcd_server srv = {0};
        fz_begin(SIZE_MAX / 2);
        fz_fail_at(fail); /* xs, ys, outcomes, names_at, scores: one of them fails */
        ck_assert(!pcd_req_scratch(&srv, 100, 3));
        fz_fail_at(0);
        ck_assert(pcd_req_scratch(&srv, 100, 3));
        ck_assert_uint_ge(srv.loop.nxs, 100);
        ck_assert_uint_ge(malloc_usable_size(srv.loop.ys), 100 * sizeof *srv.loop.ys);
        ck_assert_uint_ge(malloc_usable_size(srv.loop.outcomes), 100 * sizeof *srv.loop.outcomes);
        ck_assert_uint_ge(malloc_usable_size(srv.loop.names_at), 100 * sizeof *srv.loop.names_at);
        ck_assert_uint_ge(malloc_usable_size(srv.loop.scores), 3 * sizeof *srv.loop.scores);
        fz_end();
        pcd_req_scratch_free(&srv);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("scratch");
    TU_TCASE(s, "scratch", 0, scratch_that_fails_to_grow_is_not_counted_as_grown);
    return tu_run(s);
}

/* fuzz_config.c - the YAML config: daemon/config*.c's pcd_config_load on
 * the bytes as a file.
 *
 * Asserted: a config that loads dumps (pcd_config_dump, what --check-config
 * prints) to YAML that loads again, and that second config dumps to the
 * very same text: load -> dump -> reload -> dump is a fixed point.  Every
 * model definition is built once by the loader, under fuzz.h's memory limit,
 * so `hash_bits: 28` meets the out-of-memory path instead of a 2 GiB
 * allocation.  The file is a memfd, opened through /proc/self/fd: no disk. */
#define _GNU_SOURCE /* memfd_create */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/config/config.h"
#include "tests/fuzz/fuzz.h"

static int fd = -1;
static char path[64];

/* The text as the config file. */
static void put(const char *text, size_t n)
{
    FZ_ASSERT(ftruncate(fd, 0) == 0 && pwrite(fd, text, n, 0) == (ssize_t)n, "writing the memfd");
}

/* The dump of c, malloc'd and NUL-terminated. */
static char *dump(const pcd_config *c, size_t *n)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, n);
    FZ_ASSERT(f, "open_memstream");
    pcd_config_dump(c, f);
    FZ_ASSERT(fclose(f) == 0, "the dump did not fit");
    return text;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fd = memfd_create("pcd-fuzz-config", MFD_CLOEXEC);
    FZ_ASSERT(fd >= 0, "memfd_create");
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    put((const char *)data, size);
    pcd_config c, c2;
    char err[600];
    /* open_memstream grows its buffer with the libc allocator, which the
     * limit does not see: only the loader and the models run under it. */
    fz_begin(FZ_MEM_LIMIT);
    int rc = pcd_config_load(path, &c, err, sizeof err);
    fz_end();
    if (rc != 0) {
        FZ_ASSERT(err[0], "a refusal without a reason");
        return 0;
    }
    size_t n1, n2;
    char *d1 = dump(&c, &n1);
    put(d1, n1);
    fz_begin(FZ_MEM_LIMIT);
    rc = pcd_config_load(path, &c2, err, sizeof err);
    bool refused = fz_refused();
    fz_end();
    FZ_ASSERT(rc == 0 || refused, "the dump does not load: %s\n--- dump:\n%s", err, d1);
    if (rc == 0) {
        char *d2 = dump(&c2, &n2);
        FZ_ASSERT(n1 == n2 && !memcmp(d1, d2, n1), "dump, reload, dump differs:\n%s\n---\n%s", d1, d2);
        free(d2);
        pcd_config_free(&c2);
    }
    free(d1);
    pcd_config_free(&c);
    return 0;
}

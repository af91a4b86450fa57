/* replay.c - a fuzz target's harness without libFuzzer: runs
 * LLVMFuzzerTestOneInput once on every file named, or in the directories
 * named (sorted by name, so a failure is reproducible), as the reproducer
 * files libFuzzer writes are run.  The normal (gcc) build links it with each
 * harness, and `meson test` replays tests/fuzz/regressions/<target>/ and the
 * seed corpus: a crash once found stays fixed, with or without clang.
 * A missing directory counts as empty (a target may have no regressions). */
#include "tests/fuzz/fuzz.h"

#include <dirent.h>
#include <string.h>
#include <sys/stat.h>

static unsigned run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(1);
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "%s: out of memory\n", path);
        exit(1);
    }
    /* An exact copy, as libFuzzer passes it: a read past the end is an error
     * under AddressSanitizer and valgrind. */
    uint8_t *exact = malloc(n ? n : 1);
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 1;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static unsigned run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        names = realloc(names, (n + 1) * sizeof *names);
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, cmp_names);
    unsigned ran = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
            ran += run_file(path);
        free(names[i]);
    }
    free(names);
    return ran;
}

int main(int argc, char **argv)
{
    LLVMFuzzerInitialize(&argc, &argv);
    unsigned ran = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
            ran += run_dir(argv[i]);
        else if (stat(argv[i], &st) == 0)
            ran += run_file(argv[i]);
    }
    printf("%u inputs replayed without a failure\n", ran);
    return 0;
}

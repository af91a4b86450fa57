/* fuzz_tokens.c - the secret files: the tokens file (daemon/exec/auth.c's
 * pcd_auth_load) and the Redis password (daemon/redislog/auth.c's
 * pcd_redis_auth_load), the same bytes as auth.tokens_file and as
 * log.password_file, mode 0600 in the scratch directory.
 *
 * Asserted:
 *  - a file that loads holds as many tokens as lines that are not blank or
 *    comments, and each line's token is accepted by pcd_auth_check with the
 *    line's name and rights, and a token in none of the lines is refused;
 *  - a file without such a line is refused;
 *  - a file that is refused has a reason, and the reason never holds a
 *    token (at least PCD_TOKEN_MIN bytes) of the file: it is logged, the
 *    token is a password.  The reason is "PATH:LINE: what", and "what" may
 *    name a line (a name) or quote its rights ('rights'): a token found
 *    there only as part of one of those is not counted.
 * The harness splits lines as load_file does (up to the first NUL, CR or
 * LF; fields separated by spaces and tabs).
 *
 * The Redis password: a file that loads gives the first line's one or two
 * words (split at its one space) as user and password; a refusal has a
 * reason that never holds a word of that line of 6 bytes or more. */
#include <string.h>

#include "daemon/base/log.h"
#include "daemon/exec/auth.h"
#include "daemon/redislog/auth.h"
#include "proto/proto.h"
#include "tests/fuzz/fuzz.h"

#define MAX_LINES 64

typedef struct line {
    char *f[4]; /* name, rights, token, a fourth field (an error) */
    int n;
} line;

static char path[512];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    pcd_log_set_level("error");
    snprintf(path, sizeof path, "%s/tokens", fz_tmpdir());
    return 0;
}

/* The lines of text[0..size) as C strings split into fields, in buf (which
 * must hold size + 1 bytes); returns how many, at most MAX_LINES (-1 when
 * there are more: the harness then checks less). */
static int split(const uint8_t *text, size_t size, char *buf, line *out)
{
    memcpy(buf, text, size);
    buf[size] = 0;
    int n = 0;
    char *p = buf, *end = buf + size;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *next = nl ? nl + 1 : end;
        if (nl)
            *nl = 0;
        p[strcspn(p, "\r")] = 0;
        char *save = NULL, *s = p + strspn(p, " \t");
        if (*s && *s != '#') {
            if (n == MAX_LINES)
                return -1;
            line *l = &out[n++];
            l->n = 0;
            for (char *t = strtok_r(s, " \t", &save); t && l->n < 4; t = strtok_r(NULL, " \t", &save))
                l->f[l->n++] = t;
        }
        p = next;
    }
    return n;
}

/* The same bytes as log.password_file. */
static void redis_password(const uint8_t *data, size_t size)
{
    pcd_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.log_password_file = path;
    cfg.log_password_credential = "";
    pcd_redis_auth ra;
    char err[600] = "";
    fz_begin(FZ_MEM_LIMIT);
    int rc = pcd_redis_auth_load(&cfg, &ra, err, sizeof err);
    fz_end();
    char first[PCD_REDIS_USER_MAX + PCD_REDIS_PASSWORD_MAX + 8];
    size_t n = 0; /* the first line as fgets and the loader see it */
    while (n < size && n < sizeof first - 1 && data[n] && data[n] != '\n')
        first[n] = (char)data[n], n++;
    first[n] = 0;
    first[strcspn(first, "\r")] = 0;
    if (rc == 0) {
        char *space = strchr(first, ' ');
        const char *pw = space ? space + 1 : first;
        FZ_ASSERT(ra.set && !strcmp(ra.password, pw), "the password is not the line's");
        FZ_ASSERT(space ? !strncmp(ra.user, first, (size_t)(space - first)) &&
                              strlen(ra.user) == (size_t)(space - first)
                        : !ra.user[0],
                  "the user is not the line's");
    } else {
        FZ_ASSERT(err[0], "a refused password without a reason");
        const char *what = strstr(err, path) ? strstr(err, path) + strlen(path) : err;
        char *save = NULL;
        /* the loader's own words (redislog/auth.c, secret.c) may be in the line too */
        static const char own[] = "the Redis password is empty: the line is too long (a user of "
                                  "at most bytes, a password of at most must hold one line, "
                                  "PASSWORD or USER PASSWORD (no other spaces)";
        for (char *w = strtok_r(first, " ", &save); w; w = strtok_r(NULL, " ", &save))
            FZ_ASSERT(strlen(w) < 6 || strstr(own, w) || !strstr(what, w),
                      "the reason quotes the password: %s", err);
    }
    pcd_redis_auth_clear(&ra);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192)
        return 0;
    fz_write_file(fz_tmpdir(), "tokens", data, size);
    pcd_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.tokens_file = path;
    cfg.tokens_credential = "";
    pcd_auth *a = NULL;
    char err[600] = "";
    fz_begin(FZ_MEM_LIMIT);
    int rc = pcd_auth_load(&cfg, &a, err, sizeof err);
    bool refused = fz_refused();
    fz_end();

    char *buf = malloc(size + 1);
    line *lines = malloc(MAX_LINES * sizeof *lines);
    FZ_ASSERT(buf && lines, "out of memory");
    int n = split(data, size, buf, lines);
    /* (a NUL: see below) */
    FZ_ASSERT(rc != 0 || n != 0 || memchr(data, 0, size), "a file without a token line loaded");
    if (rc != 0) {
        FZ_ASSERT(err[0], "a refusal without a reason");
        const char *what = err; /* past "PATH:LINE:" */
        if (!strncmp(what, path, strlen(path)))
            what += strlen(path) + strspn(what + strlen(path), ":0123456789");
        /* What the reason may quote: every name, and every rights in quotes. */
        char *known = malloc(2 * size + 4 * MAX_LINES + 1), *k = known;
        FZ_ASSERT(known, "out of memory");
        for (int i = 0; i < n; i++)
            for (int f = 0; f < 2 && f < lines[i].n; f++)
                k += sprintf(k, f ? "'%s'\n" : "%s\n", lines[i].f[f]);
        *k = 0;
        for (int i = 0; i < n; i++) {
            const char *tok = lines[i].n >= 3 ? lines[i].f[2] : NULL;
            if (tok && strlen(tok) >= PCD_TOKEN_MIN && strstr(what, tok))
                FZ_ASSERT(strstr(known, tok), "the reason holds the token of line %d: %s", i + 1, err);
        }
        free(known);
    } else if (!refused && n > 0 && !memchr(data, 0, size)) {
        /* (A NUL ends a line for the loader but not its fgets: the bytes
         * after it on a line of 640 or more are read as a line of their own.
         * The harness does not model that.) */
        FZ_ASSERT(a && pcd_auth_count(a) == (size_t)n, "%zu tokens loaded from %d lines",
                  pcd_auth_count(a), n);
        for (int i = 0; i < n; i++) {
            const char *name;
            unsigned rights;
            FZ_ASSERT(lines[i].n == 3, "line %d has %d fields and loaded", i + 1, lines[i].n);
            const char *tok = lines[i].f[2];
            FZ_ASSERT(pcd_auth_check(a, tok, strlen(tok), &name, &rights),
                      "the token of line %d is refused", i + 1);
            FZ_ASSERT(!strcmp(name, lines[i].f[0]) && (int)rights == pcp_right_find(lines[i].f[1]),
                      "line %d's token gives %s, %u", i + 1, name, rights);
        }
        static const char none[] = "no line of the file has this token \x01";
        FZ_ASSERT(!pcd_auth_check(a, none, sizeof none - 1, &(const char *){NULL}, &(unsigned){0}),
                  "a token in no line is accepted");
    }
    pcd_auth_free(a);
    free(lines);
    free(buf);
    redis_password(data, size);
    return 0;
}
